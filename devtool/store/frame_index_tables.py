"""The frame indexes of big runs, kept in the store: written a batch at a time, read at each cut (`read_cut`).

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

What a cut needs (`read_cut`) is read in one read transaction, all in DuckDB: the cut event, the
frames the cut leaves open (made before it, changed after it; few), how many children each has at
the cut, the largest chunks of those children the cut seals whole, the other sealed children (a
chunk's worth or so per open frame, one row each), and the events of the open frames before the
cut. Nothing else of the prefix is read, so a rewind reads about as much at any cut of any run.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Literal

import duckdb
import orjson

from devtool.core.frame_cut import ReusedChunk, SealedChild
from devtool.core.frame_index_records import Batch, IndexedFrame
from devtool.core.snapshot_tree import FANOUT
from devtool.store import list_param, span_keys
from devtool.store.database import Store
from devtool.store.errors import NotFoundError
from devtool.store.id_lists import rows_by_ids
from devtool.store.run_caches import stale_runs
from devtool.store.snapshots import write_nodes

Anchor = Literal["before", "after"]


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
    last event id, by trace id (biggest runs first)."""
    return stale_runs(store, "rewind.rewind_runs", min_events=min_events)


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


@dataclass(frozen=True)
class IndexedCut:
    """What `core.frame_cut.restore_open` needs of a fresh index at one cut."""

    rows: list[tuple[int, Any]]  # the cut event and the open frames' events before it: (event id, event)
    open_frames: list[IndexedFrame]
    sealed: list[SealedChild]
    chunks: list[ReusedChunk]
    children: dict[int, int]  # how many children each open frame has at the cut


def read_cut(store: Store, trace_id: str, span_id: str, anchor: Anchor) -> IndexedCut | None:
    """What the run's fresh index holds for the cut at span `span_id`'s start (`before`) or end
    (`after`); None when the run has no fresh index or no such span edge."""
    with store.reader() as cursor:
        # One read transaction: an index rebuilt meanwhile is seen whole or not at all.
        cursor.execute("BEGIN TRANSACTION")
        indexed = cursor.execute(
            "SELECT build, last_event_id FROM rewind.rewind_runs WHERE trace_id = ? AND indexed", [trace_id]
        ).fetchall()
        if not indexed or _grown(cursor, trace_id, indexed[0][1]):
            return None
        # restore's cut: the span's first start (before) or end (after) event, in restore order (an
        # indexed run's events are stored in time order).
        cut_event = span_keys.edge_event(cursor, trace_id, span_id, anchor)
        if cut_event is None:
            return None
        params: dict[str, Any] = {"trace": trace_id, "build": indexed[0][0], "cut": cut_event}
        cut = _Cut(anchor)
        open_frames = [
            IndexedFrame(frame, parent, position, call_id, created, last, tuple(events), "", "running", None)
            for frame, parent, position, call_id, created, last, events in cursor.execute(
                cut.format(_OPEN_FRAMES), params
            ).fetchall()
        ]
        params["open"] = list_param.values(frame.index for frame in open_frames)
        children = dict(cursor.execute(cut.format(_CHILDREN), params).fetchall())
        params["fanout"] = FANOUT
        chunks = [
            ReusedChunk(frame, level, position, node, orjson.loads(aggregate))
            for frame, level, position, node, aggregate in cursor.execute(cut.format(_REUSED), params).fetchall()
        ]
        parents, lows, highs = _outside(children, chunks)
        sealed_rows = []
        if parents:
            # A branch per range, its bounds constants: DuckDB reads the row groups of those positions.
            sql = " UNION ALL ".join(cut.format(_SEALED).format(i=i) for i in range(len(parents)))
            ranges = {f"{name}{i}": values[i] for name, values in (("parent", parents), ("low", lows), ("high", highs))
                      for i in range(len(parents))}  # fmt: skip
            keep = {name: params[name] for name in ("trace", "build", "cut", "open")}
            sealed_rows = cursor.execute(sql, {**keep, **ranges}).fetchall()
        ids = sorted({event for frame in open_frames for event in frame.events} | {params["cut"]})
        events = rows_by_ids(cursor, "SELECT event_id, body FROM events WHERE event_id = ANY({ids})", ids)
        rows = sorted((event_id, orjson.loads(body)) for event_id, body in events)
    sealed = [
        SealedChild(
            parent,
            position,
            call_id,
            node,
            status,
            orjson.loads(error) if error is not None else None,
            orjson.loads(aggregate) if aggregate is not None else None,
        )
        for parent, position, call_id, node, status, error, aggregate in sealed_rows
    ]
    return IndexedCut(rows, open_frames, sealed, chunks, children)


def _outside(children: dict[int, int], chunks: list[ReusedChunk]) -> tuple[list[int], list[int], list[int]]:
    """The ranges of positions `[low, high)` of each open frame's children at the cut that no reused
    chunk holds, as three lists (frame, low, high): where its sealed children are placed one by one."""
    parents: list[int] = []
    lows: list[int] = []
    highs: list[int] = []
    for frame, count in children.items():
        start = 0
        held = sorted(
            (chunk.position * FANOUT ** (chunk.level + 1), (chunk.position + 1) * FANOUT ** (chunk.level + 1))
            for chunk in chunks
            if chunk.frame == frame
        )
        for low, high in [*held, (count, count)]:
            if low > start:
                parents.append(frame)
                lows.append(start)
                highs.append(low)
            start = max(start, high)
    return parents, lows, highs


def _grown(cursor: duckdb.DuckDBPyConnection, trace_id: str, last_event_id: int) -> bool:
    """Whether the run has an event stored after `last_event_id`: DuckDB reads only the row groups of
    `events` past it (event ids grow as they are stored), not the run's."""
    return bool(
        cursor.execute(
            "SELECT 1 FROM events WHERE event_id > ? AND trace_id = ? LIMIT 1", [last_event_id, trace_id]
        ).fetchall()
    )


def _json(value: Any) -> str | None:
    return None if value is None else orjson.dumps(value).decode()


class _Cut:
    """The cut's two conditions, spelled for its anchor: a frame is in the cut when it was made
    before the cut event (or by it, after); sealed when it last changed in the cut."""

    def __init__(self, anchor: Anchor) -> None:
        after = anchor == "after"
        self.made = "created <= $cut" if after else "created < $cut"
        self.sealed = "last <= $cut" if after else "last < $cut"
        # After a span's end, the frame its end event changed is rebuilt (it is where the cut is applied).
        self.changed_by_cut = "created <= $cut AND last >= $cut AND list_contains(events, $cut)" if after else "false"

    def format(self, sql: str) -> str:
        return sql.format(made=self.made, sealed=self.sealed, changed_by_cut=self.changed_by_cut)


_OF_BUILD = "trace_id = $trace AND build = $build"

_OPEN_FRAMES = """
    WITH RECURSIVE cut_frames(frame) AS (
        SELECT frame FROM rewind.rewind_frames WHERE trace_id = $trace AND build = $build AND {changed_by_cut}
        UNION
        SELECT f.parent FROM rewind.rewind_frames f JOIN cut_frames c ON f.frame = c.frame
        WHERE f.trace_id = $trace AND f.build = $build AND f.parent >= 0
    )
    SELECT frame, parent, position, call_id, created, last, list_filter(events, lambda e: e < $cut)
    FROM rewind.rewind_frames
    WHERE trace_id = $trace AND build = $build AND {made}
      AND (NOT {sealed} OR frame = 0 OR frame IN (SELECT frame FROM cut_frames))
    ORDER BY frame
"""

# The open frames at the cut (`$open`, a `list_param`).
_OPEN = list_param.of("open", "BIGINT")

# How many children each open frame has at the cut.
_CHILDREN = f"""
    SELECT parent, count(*) AS n FROM rewind.rewind_frames
    WHERE trace_id = $trace AND build = $build AND parent IN (SELECT unnest({_OPEN})) AND {{made}}
    GROUP BY parent
"""

# The chunks of open frames' children the cut seals whole (full at the cut, holding no running frame
# and not the newest child: those the root's status is read from), the largest of them.
_USABLE = f"""
    counts AS ({_CHILDREN}),
    usable AS (
        SELECT c.frame, c.level, c.position, c.node_id, c.aggregate
        FROM rewind.rewind_chunks c JOIN counts k ON k.parent = c.frame
        WHERE c.trace_id = $trace AND c.build = $build AND NOT c.running AND c.{{sealed}}
          AND (c.position + 1) * CAST(pow($fanout, c.level + 1) AS BIGINT) < k.n
    ),
    largest AS (
        SELECT * FROM usable u
        WHERE NOT EXISTS (
            SELECT 1 FROM usable p
            WHERE p.frame = u.frame AND p.level = u.level + 1 AND p.position = u.position // $fanout
        )
    )
"""

# With the aggregate usage of each chunk's frames, added up when the index was built.
_REUSED = f"""
    WITH {_USABLE}
    SELECT frame, level, position, node_id, aggregate FROM largest
"""

# The sealed children of open frames outside the chunks reused: in the ranges of positions `_outside`
# finds (a chunk's worth or so per open frame), so the statement does not grow with the frames that
# ended. One range a statement branch: the `i`th, of parameters `parent<i>`, `low<i>`, `high<i>`.
_SEALED = f"""
    SELECT parent, position, call_id, node_id, status, error, aggregate FROM rewind.rewind_frames
    WHERE trace_id = $trace AND build = $build AND {{made}} AND {{sealed}} AND frame NOT IN (SELECT unnest({_OPEN}))
      AND parent = $parent{{{{i}}}} AND position >= $low{{{{i}}}} AND position < $high{{{{i}}}}
"""

# A run's last stored event, from the events themselves: a live append stores its events before the
# run's summary (`runs`) is derived, and an index must not be taken as covering events it has not seen.
_LAST_EVENT = "SELECT max(event_id) FROM events WHERE trace_id = $trace"
