"""What a run says about itself: its `runWith:start` metadata, the snapshots it dumped, its replays.

`devtool run` records the entrypoint and props it ran in the metadata of the run's `runWith:start`
event (what the Replay button runs again), and a replay records, under `metadata.replay`, the
snapshot it started from, the run that snapshot came from and the id the DevTool gave the replay:
that is how a replay finds its original and the DevTool finds the run a replay it started became.
`dump_snapshot()` emits a `snapshot:dump` event carrying the snapshot and its id.

Only `runWith:start` and `snapshot:dump` events are read (a handful per run, found by the `type`
column), never the whole run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from devtool.store.database import Store
from devtool.store.errors import NotFoundError


@dataclass(frozen=True, slots=True)
class SnapshotDump:
    """A `dump_snapshot()` call in a run: when, in which frame, and the snapshot it took."""

    span_id: str
    ts_ms: float
    call_id: str | None
    agent_id: str | None
    snapshot_id: str | None  # as the run reported it
    snapshot: dict[str, Any] | None


def run_exists(store: Store, trace_id: str) -> bool:
    """Whether the store has run `trace_id`."""
    return bool(store.query("SELECT 1 FROM runs WHERE trace_id = ?", [trace_id]))


def run_metadata(store: Store, trace_id: str) -> dict[str, Any]:
    """The metadata of run `trace_id`'s `runWith:start` ({} when it has none); `NotFoundError` if no run."""
    rows = store.query(
        """
        SELECT (SELECT body FROM events
                WHERE trace_id = $trace AND type = 'runWith:start' ORDER BY event_id LIMIT 1)
        FROM runs WHERE trace_id = $trace
        """,
        {"trace": trace_id},
    )
    if not rows:
        raise NotFoundError(f"no run {trace_id!r} in the store")
    if rows[0][0] is None:
        return {}
    metadata = orjson.loads(rows[0][0]).get("metadata")
    return metadata if isinstance(metadata, dict) else {}


@dataclass(frozen=True, slots=True)
class RunStart:
    """How a run began, for replaying it: its `runWith:start` metadata, the props it was started with
    (recorded by `devtool run` in the metadata, else the `props` of the TypeScript library's
    `runWith:start`, else of its first agent), and whether the TypeScript library wrote it (its events
    carry no `callId`; ours all do)."""

    metadata: dict[str, Any]
    props: Any
    typescript: bool
    name: str | None = None  # what the run is called (its `runWith:start` `name`), which a replay keeps


def run_start(store: Store, trace_id: str) -> RunStart:
    """How run `trace_id` began; `NotFoundError` if the store has no such run."""
    rows = store.query(
        """
        SELECT (SELECT body FROM events
                WHERE trace_id = $trace AND type IN ('runWith:start', 'agent:start')
                ORDER BY type <> 'runWith:start', event_id LIMIT 1)
        FROM runs WHERE trace_id = $trace
        """,
        {"trace": trace_id},
    )
    if not rows:
        raise NotFoundError(f"no run {trace_id!r} in the store")
    start = orjson.loads(rows[0][0]) if rows[0][0] is not None else {}
    found = start.get("metadata")
    metadata: dict[str, Any] = found if isinstance(found, dict) else {}
    props = metadata["props"] if "props" in metadata else start.get("props", {})
    name = start.get("name") if start.get("type") == "runWith:start" else None
    return RunStart(metadata, props, bool(start) and "callId" not in start, name if isinstance(name, str) else None)


def run_of_replay(store: Store, replay_id: str) -> str | None:
    """The trace id of the run that replay `replay_id` became, once its first event is stored."""
    rows = store.query(
        """
        SELECT trace_id FROM events
        WHERE type = 'runWith:start' AND json_extract_string(body, '$.metadata.replay.id') = ?
        ORDER BY event_id LIMIT 1
        """,
        [replay_id],
    )
    return rows[0][0] if rows else None


def replays_of(store: Store, trace_id: str) -> list[tuple[str, str | None]]:
    """Runs that replayed a snapshot of run `trace_id`: (their trace id, the snapshot id), newest first."""
    rows = store.query(
        """
        SELECT trace_id, json_extract_string(body, '$.metadata.replay.snapshotId') FROM events
        WHERE type = 'runWith:start' AND json_extract_string(body, '$.metadata.replay.originalTraceId') = ?
        ORDER BY event_id DESC
        """,
        [trace_id],
    )
    return [(row[0], row[1]) for row in rows]


def snapshot_dumps(store: Store, trace_id: str) -> list[SnapshotDump]:
    """The `snapshot:dump` events of run `trace_id`, in time order."""
    rows = store.query(
        "SELECT span_id, ts, body FROM events WHERE trace_id = ? AND type = 'snapshot:dump' ORDER BY ts, event_id",
        [trace_id],
    )
    dumps = []
    for span_id, ts, body in rows:
        event = orjson.loads(body)
        snapshot = event.get("snapshot")
        reported = event.get("snapshotId")
        dumps.append(
            SnapshotDump(
                span_id=span_id,
                ts_ms=ts,
                call_id=_text(event.get("callId")),
                agent_id=_text(event.get("agentId")),
                snapshot_id=_text(reported),
                snapshot=snapshot if isinstance(snapshot, dict) else None,
            )
        )
    return dumps


def dumped_snapshot(store: Store, snapshot_id: str) -> dict[str, Any] | None:
    """The snapshot a `snapshot:dump` event reported under `snapshot_id`, if any run in the store has it."""
    rows = store.query(
        """
        SELECT body FROM events
        WHERE type = 'snapshot:dump' AND json_extract_string(body, '$.snapshotId') = ?
        ORDER BY event_id LIMIT 1
        """,
        [snapshot_id],
    )
    if not rows:
        return None
    snapshot = orjson.loads(rows[0][0]).get("snapshot")
    return snapshot if isinstance(snapshot, dict) else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None
