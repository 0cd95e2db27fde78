"""Names for what rewinds and replays make: a cut ("before tool fetch_page in researcher #1"), a
replay or fork of a run ("replay", "fork: memory of researcher #1"), and the runs one compares a
run with (its original, its replays and forks, other runs of its name or entrypoint).

A replay's run says what it replayed in its `runWith:start` (`metadata.replay`: the snapshot and the
original run); a fork is a replay of a snapshot whose `metadata.fork` says which frames' memory
it edited and which journal entries it dropped (`devtool.actions.fork`).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from devtool.core.call_names import call_name
from devtool.store.database import Store
from devtool.store.errors import NotFoundError
from devtool.store.snapshots import get_snapshot

MAX_RELATIVES = 40


def cut_name(store: Store, trace_id: str, span_id: str, anchor: str | None) -> str | None:
    """`before tool fetch_page in researcher #1`: a cut named by its span; None when the span is not stored."""
    rows = store.query(
        """
        WITH RECURSIVE up(span_id, parent, call_id, kind, name, d) AS (
            SELECT span_id, parent_span_id, call_id, kind, name, 0 FROM spans WHERE trace_id = $t AND span_id = $s
            UNION ALL
            SELECT s.span_id, s.parent_span_id, s.call_id, s.kind, s.name, up.d + 1
            FROM spans s JOIN up ON s.trace_id = $t AND s.span_id = up.parent WHERE up.d < 64
        )
        SELECT kind, name, call_id FROM up ORDER BY d
        """,
        {"t": trace_id, "s": span_id.partition("#")[0]},
    )
    if not rows:
        return None
    kind, name, call_id = rows[0]
    if call_id:
        named = call_name(call_id)
    else:
        own = f"tools {name}" if kind == "tools:execute" else f"{kind} {name}" if name != kind else kind
        frame = next((c for k, _, c in rows[1:] if c and k in ("agent", "runWith")), None)
        named = f"{own} in {call_name(frame)}" if frame else own
    return f"{anchor} {named}" if anchor else named


@dataclass(frozen=True, slots=True)
class Lineage:
    """Where a replayed run came from: `label` is "replay" or "fork: memory of researcher #1"."""

    trace_id: str
    label: str
    original: str | None
    snapshot_id: str | None

    @property
    def fork(self) -> bool:
        return self.label.startswith("fork")


def lineages(store: Store, trace_ids: Collection[str]) -> dict[str, Lineage]:
    """The runs of `trace_ids` that are replays or forks, by trace id."""
    if not trace_ids:
        return {}
    rows = store.query(
        """
        SELECT trace_id, json_extract_string(body, '$.metadata.replay.originalTraceId'),
               json_extract_string(body, '$.metadata.replay.snapshotId')
        FROM events
        WHERE type = 'runWith:start' AND trace_id IN (SELECT unnest($ids))
              AND json_extract(body, '$.metadata.replay') IS NOT NULL
        """,
        {"ids": list(trace_ids)},
    )
    return {trace: Lineage(trace, replay_label(store, snap), original, snap) for trace, original, snap in rows}


def replay_label(store: Store, snapshot_id: str | None) -> str:
    """ "replay", or for a replay of a forked snapshot what the fork changed: "fork: memory of researcher #1"."""
    if not snapshot_id:
        return "replay"
    try:
        metadata = get_snapshot(store, snapshot_id).top.get("metadata")
    except NotFoundError:
        return "replay"
    fork = metadata.get("fork") if isinstance(metadata, dict) else None
    if not isinstance(fork, dict):
        return "replay"
    changes = [f"memory of {call_name(c)}" for c in _strings(fork.get("memory"))]
    dropped = [d for d in fork.get("dropped") or [] if isinstance(d, dict)]
    changes += [f"dropped {d.get('kind', 'call')} in {call_name(str(d.get('callId', '')))}" for d in dropped]
    return "fork: " + "; ".join(changes) if changes else "fork"


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


@dataclass(frozen=True, slots=True)
class Relative:
    """A run one may compare a run with, and how it relates: "original", "replay", "fork: …", "same name"."""

    trace_id: str
    name: str
    relation: str
    started_ms: float


def relatives(store: Store, trace_id: str) -> list[Relative]:
    """Runs to compare run `trace_id` with: its original, its replays and forks, then other runs of its
    name or entrypoint (newest first), at most 40."""
    rows = store.query(
        """
        WITH me AS (
            SELECT r.name, (SELECT body FROM events WHERE trace_id = $t AND type = 'runWith:start' LIMIT 1) AS start
            FROM runs r WHERE r.trace_id = $t
        ),
        starts AS (
            SELECT trace_id, json_extract_string(body, '$.metadata.replay.originalTraceId') AS original,
                   json_extract_string(body, '$.metadata.entrypoint') AS entrypoint
            FROM events WHERE type = 'runWith:start'
        )
        SELECT r.trace_id, r.name, r.started_ts,
               CASE WHEN r.trace_id = json_extract_string((SELECT start FROM me), '$.metadata.replay.originalTraceId')
                    THEN 0 WHEN s.original = $t THEN 1 ELSE 2 END AS rank
        FROM runs r LEFT JOIN starts s ON s.trace_id = r.trace_id
        WHERE r.trace_id <> $t AND (
            r.trace_id = json_extract_string((SELECT start FROM me), '$.metadata.replay.originalTraceId')
            OR s.original = $t OR r.name = (SELECT name FROM me)
            OR s.entrypoint = json_extract_string((SELECT start FROM me), '$.metadata.entrypoint'))
        ORDER BY rank, r.started_ts DESC
        LIMIT $n
        """,
        {"t": trace_id, "n": MAX_RELATIVES},
    )
    kinds = lineages(store, [row[0] for row in rows if row[3] == 1])
    found = []
    for trace, name, started, rank in rows:
        relation = "original" if rank == 0 else kinds[trace].label if trace in kinds else "same name or entrypoint"
        found.append(Relative(str(trace), str(name), relation, float(started)))
    return found
