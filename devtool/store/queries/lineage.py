"""Names for what rewinds and replays make: a cut's span ("tool fetch_page in researcher #1"), a
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

from devtool.core.call_names import agent_of, call_name
from devtool.store import list_param
from devtool.store.database import Store
from devtool.store.errors import NotFoundError
from devtool.store.queries.run_meta import replays_of
from devtool.store.snapshots import get_snapshot

MAX_RELATIVES = 40


def span_names(store: Store, spans: Collection[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """`tool fetch_page in researcher #1`: each (trace id, span id) named by its call, or by its kind and
    name in the nearest agent above it (a tool batch has no callId of its own); spans not stored are left out."""
    seeds = sorted({(trace, span.partition("#")[0]) for trace, span in spans})
    if not seeds:
        return {}
    rows = store.query(
        f"""
        WITH RECURSIVE seeds AS (
            SELECT unnest({list_param.of("traces")}) AS trace_id, unnest({list_param.of("spans")}) AS span_id
        ),
        up(trace_id, seed, span_id, parent, call_id, kind, name, d) AS (
            SELECT s.trace_id, s.span_id, s.span_id, s.parent_span_id, s.call_id, s.kind, s.name, 0
            FROM spans s JOIN seeds USING (trace_id, span_id)
            UNION ALL
            SELECT up.trace_id, up.seed, s.span_id, s.parent_span_id, s.call_id, s.kind, s.name, up.d + 1
            FROM up JOIN spans s ON s.trace_id = up.trace_id AND s.span_id = up.parent
            WHERE up.d < 64 AND up.call_id IS NULL
        )
        SELECT trace_id, seed, kind, name, call_id FROM up ORDER BY trace_id, seed, d
        """,
        {"traces": list_param.values(t for t, _ in seeds), "spans": list_param.values(s for _, s in seeds)},
    )
    chains: dict[tuple[str, str], list[tuple[str, str, str | None]]] = {}
    for trace, seed, kind, name, call_id in rows:
        chains.setdefault((trace, seed), []).append((kind, name, call_id))
    named = {key: _named(chain) for key, chain in chains.items()}
    return {
        (trace, span): named[trace, span.partition("#")[0]]
        for trace, span in spans
        if (trace, span.partition("#")[0]) in named
    }


def _named(chain: list[tuple[str, str, str | None]]) -> str:
    kind, name, call_id = chain[0]
    # A batch of one tool call carries that call's callId; a batch of several, its agent's.
    if call_id and (kind != "tools:execute" or call_id.rsplit("/", 1)[-1].startswith("tool:")):
        return call_name(call_id)
    own = f"tools {name}" if kind == "tools:execute" else kind if name == kind else f"{kind} {name}"
    frame = call_id or next((c for _, _, c in chain[1:] if c), None)
    return f"{own} in {call_name(agent_of(frame))}" if frame else own


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
        f"""
        SELECT trace_id, json_extract_string(body, '$.metadata.replay.originalTraceId'),
               json_extract_string(body, '$.metadata.replay.snapshotId')
        FROM events
        WHERE type = 'runWith:start' AND trace_id IN (SELECT unnest({list_param.of("ids")}))
              AND json_extract(body, '$.metadata.replay') IS NOT NULL
        """,
        {"ids": list_param.values(trace_ids)},
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
    return fork_label(metadata) or "replay"


def fork_label(metadata: Any) -> str | None:
    """What a forked snapshot's `metadata.fork` says it changed ("fork: memory of writer #0"); None if no fork."""
    fork = metadata.get("fork") if isinstance(metadata, dict) else None
    if not isinstance(fork, dict):
        return None
    changes = [f"memory of {call_name(c)}" for c in _strings(fork.get("memory"))]
    dropped = [d for d in fork.get("dropped") or [] if isinstance(d, dict)]
    changes += [f"dropped {d.get('kind', 'call')} in {call_name(str(d.get('callId', '')))}" for d in dropped]
    return "fork: " + "; ".join(changes) if changes else "fork"


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def named_replays(store: Store, trace_id: str, limit: int = 20) -> list[tuple[str, str, str]]:
    """Run `trace_id`'s replays and forks, newest first: (trace id, run name, "replay" or "fork: …")."""
    found = replays_of(store, trace_id)[:limit]
    ids = {"ids": list_param.values(trace for trace, _ in found)}
    names = dict(
        store.query(f"SELECT trace_id, name FROM runs WHERE trace_id IN (SELECT unnest({list_param.of('ids')}))", ids)
    )
    return [(trace, str(names.get(trace, trace)), replay_label(store, snapshot)) for trace, snapshot in found]


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
