"""The frame indexes of big runs, kept in the store: written a batch at a time (a cut is read from them by
`frame_index_cut.read_cut`).

`devtool.core.frame_index` says what a frame index is and `devtool.core.frame_cut` why a rewind made
from it is the snapshot `restore_snapshot` makes; `devtool.actions.frame_indexer` builds them and
`devtool.actions.run_rewind` decides when one is used. This module only keeps them: each frame's row
in `rewind_frames`, the full chunks of wide frames' children in `rewind_chunks`, each frame's and
chunk's node (as the run ends) in `snapshot_nodes`, where snapshots find them, and a row per run in
`rewind_runs` that says whether the run could be indexed, up to which event, and which build of its
index to read. An index is fresh only while the run has no event newer than that (in `events`: a
live run's summary in `runs` may lag its events).

Writing holds the write lock for short stretches only: each batch the index walk hands over is
written in a transaction of its own beside the writer (`Store.beside`), which holds the write lock for
its commit alone, under a build number (`new_build`) that no reader looks at until one last short
transaction names it in `rewind_runs` (`finish_index`); the rows of the build it replaces are deleted
afterwards. Live appends to other runs wait at most a batch's commit: the index's tables are in the
store's rewind file (`rewind_file.py`), whose checkpoints, which the writer makes itself every few
batches (`CHECKPOINT_WAL`), do not hold up commits to the events' file.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import duckdb
import orjson

from devtool.core.frame_index_records import Batch
from devtool.store import list_param
from devtool.store.database import Store
from devtool.store.errors import NotFoundError
from devtool.store.lake.opening import unfinished_opens
from devtool.store.run_caches import stale_runs
from devtool.store.snapshots import write_nodes


@dataclass(frozen=True, slots=True)
class IndexState:
    """A run's frame index as the store has it."""

    trace_id: str
    indexed: bool  # False: the run cannot be indexed (`reason`), its rewinds read its events
    fresh: bool  # the run has no event newer than the index
    reason: str | None
    events: int
    frames: int
    seconds: float  # how long building it took


def index_state(store: Store, trace_id: str) -> IndexState | None:
    """The run's index, or None when it has none."""
    rows = store.query(
        f"""
        SELECT indexed, last_event_id = ({_LAST_EVENT}), reason, events, frames, seconds
        FROM rewind.rewind_runs WHERE trace_id = $trace
        """,
        {"trace": trace_id},
    )
    return IndexState(trace_id, *rows[0]) if rows else None


def runs_to_index(store: Store, *, min_events: int) -> dict[str, int]:
    """Runs of at least `min_events` events whose index is missing or older than the run: their
    last event id, by trace id (biggest runs first). Not a run being copied from the team's lake (a part
    of it is not the run), nor one a span link copied out of order: the index walks a run in its ids'
    order, and a rewind of it reads its events in the lake's order (`lake.prefix`)."""
    due = stale_runs(store, "rewind.rewind_runs", min_events=min_events)
    for trace_id in unfinished_opens(store, unordered=True):
        due.pop(trace_id, None)
    return due


def last_event_of(store: Store, trace_id: str) -> int:
    """The id of run `trace_id`'s last stored event; `NotFoundError` if the store has no such run."""
    last = store.query(_LAST_EVENT, {"trace": trace_id})[0][0]
    if last is None:
        raise NotFoundError(f"no run {trace_id!r} in the store")
    return int(last)


def new_build(store: Store) -> int:
    """A number for an index about to be written, which no reader uses until `finish_index` names it."""
    with store.transaction(derives=False) as conn:
        return int(conn.execute("SELECT nextval('rewind.rewind_builds')").fetchall()[0][0])


# A batch is written again when a rewind stored one of its nodes between its insert and its commit.
_TRIES = 3
# The index checkpoints the rewind file once its commits have grown that file's WAL this much, far
# below the store's threshold (`database.CHECKPOINT_THRESHOLD`): what it committed waits in memory
# only until then.
CHECKPOINT_WAL = 4 * 2**20


class BatchWriter:
    """The index walk's sink: each batch it hands over, in a transaction of its own, under `build`."""

    def __init__(self, store: Store, trace_id: str, build: int) -> None:
        self.store, self.trace_id, self.build = store, trace_id, build
        self.frames = 0

    def __call__(self, batch: Batch) -> None:
        for attempt in range(_TRIES):
            try:
                # It writes no spans or runs, nor anything an append writes: only its commit waits.
                with self.store.beside() as conn:
                    self._write(conn, batch)
                break
            except duckdb.TransactionException:
                if attempt == _TRIES - 1:
                    raise
        self.frames += len(batch.frames)
        if self.store.wal_bytes(rewind=True) >= CHECKPOINT_WAL:
            self.store.checkpoint(rewind=True)

    def _write(self, conn: duckdb.DuckDBPyConnection, batch: Batch) -> None:
        frames, chunks = batch.frames, batch.chunks
        write_nodes(conn, batch.nodes, batch.counts)
        self._insert(
            conn,
            "rewind.rewind_frames",
            {
                "frame": ("INTEGER", [frame.index for frame in frames]),
                "parent": ("INTEGER", [frame.parent for frame in frames]),
                "position": ("INTEGER", [frame.position for frame in frames]),
                "call_id": ("VARCHAR", [frame.call_id for frame in frames]),
                "created": ("BIGINT", [frame.created for frame in frames]),
                "last": ("BIGINT", [frame.last for frame in frames]),
                "node_id": ("VARCHAR", [frame.node for frame in frames]),
                "status": ("VARCHAR", [frame.status for frame in frames]),
                "error": ("VARCHAR", [_json(frame.error) for frame in frames]),
                "events": ("BIGINT[]", [list(frame.events) for frame in frames]),
                "aggregate": ("VARCHAR", [_json(frame.aggregate) for frame in frames]),
            },
        )
        self._insert(
            conn,
            "rewind.rewind_chunks",
            {
                "frame": ("INTEGER", [chunk.frame for chunk in chunks]),
                "level": ("INTEGER", [chunk.level for chunk in chunks]),
                "position": ("INTEGER", [chunk.position for chunk in chunks]),
                "last": ("BIGINT", [chunk.last for chunk in chunks]),
                "running": ("BOOLEAN", [chunk.running for chunk in chunks]),
                "node_id": ("VARCHAR", [chunk.node for chunk in chunks]),
                "aggregate": ("VARCHAR", [_json(chunk.aggregate) for chunk in chunks]),
            },
        )

    def _insert(self, conn: duckdb.DuckDBPyConnection, table: str, columns: dict[str, tuple[str, list[Any]]]) -> None:
        """Rows of `table` after its trace and build, a list a column (its SQL type and values), in the
        table's column order; each list a `list_param`."""
        if not next(iter(columns.values()))[1]:
            return
        values = ", ".join(f"unnest({list_param.of(name, sql_type)})" for name, (sql_type, _) in columns.items())
        conn.execute(
            f"INSERT INTO {table} SELECT $trace, $build, {values}",
            {
                "trace": self.trace_id,
                "build": self.build,
                **{name: list_param.values(items) for name, (_, items) in columns.items()},
            },
        )


def duplicate_call_id(store: Store, trace_id: str, build: int) -> str | None:
    """A callId two frames of one parent share in the build, if any (the second replaces the first in
    a walk of every event, which a rewind from the index cannot know)."""
    rows = store.query(
        f"SELECT call_id FROM rewind.rewind_frames WHERE {_OF_BUILD} "
        "GROUP BY parent, call_id HAVING count(*) > 1 LIMIT 1",
        {"trace": trace_id, "build": build},
    )
    return str(rows[0][0]) if rows else None


def finish_index(
    store: Store,
    trace_id: str,
    build: int,
    last_event_id: int,
    *,
    events: int,
    frames: int,
    reason: str | None,
    began: float,
) -> IndexState:
    """Make build `build` the run's index as of `last_event_id` (with `reason` set: record that the
    run cannot be indexed and why, so it is not tried again until it grows), and delete the rows of
    every other build. `began` is the `time.perf_counter()` at which building it started."""
    with store.transaction(derives=False) as conn:
        conn.execute("DELETE FROM rewind.rewind_runs WHERE trace_id = ?", [trace_id])
        conn.execute(
            "INSERT INTO rewind.rewind_runs (trace_id, build, last_event_id, indexed, reason, events, frames, seconds) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                trace_id,
                build,
                last_event_id,
                reason is None,
                reason,
                events if reason is None else 0,
                frames if reason is None else 0,
                time.perf_counter() - began,
            ],
        )
    keep = build if reason is None else None
    for table in ("rewind.rewind_frames", "rewind.rewind_chunks"):  # its nodes stay: snapshots share them
        with store.transaction(derives=False) as conn:
            conn.execute(f"DELETE FROM {table} WHERE trace_id = ? AND build IS DISTINCT FROM ?", [trace_id, keep])
    state = index_state(store, trace_id)
    if state is None:
        raise NotFoundError(f"no run {trace_id!r} in the store")
    return state


def _json(value: Any) -> str | None:
    return None if value is None else orjson.dumps(value).decode()


_OF_BUILD = "trace_id = $trace AND build = $build"
_LAST_EVENT = "SELECT max(event_id) FROM events WHERE trace_id = $trace"
