"""The frame indexes of big runs, kept in the store: written once (`write_index`), read at each cut (`read_cut`).

`devtool.core.frame_index` says what a frame index is and why a rewind made from it is the snapshot
`restore_snapshot` makes; `devtool.actions.frame_indexer` builds them and `devtool.actions.run_rewind`
decides when one is used. This module only keeps them: each frame's row in `rewind_frames`, each
frame's node (as the run ends) in `snapshot_nodes`, where snapshots find them, and a row per run in
`rewind_runs` that says whether the run could be indexed and up to which event. An index is fresh
only while the run has no event newer than that (in `events`: a live run's summary in `runs` may lag
its events).

What a cut needs (`read_cut`) is read in one read transaction, all in DuckDB: the cut event, the
frames the cut leaves open (made before it, changed after it; few), the sealed children of those (one
row each: call id, node id, status), and the events of the open frames before the cut. Nothing else
of the prefix is read.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Literal

import duckdb
import orjson

from devtool.core.frame_index import IndexedFrame, RunIndex, SealedChild
from devtool.store.database import Store
from devtool.store.errors import NotFoundError, StoreError
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
        FROM rewind_runs WHERE trace_id = $trace
        """,
        {"trace": trace_id},
    )
    return IndexState(trace_id, *rows[0]) if rows else None


def runs_to_index(store: Store, *, min_events: int) -> dict[str, int]:
    """Runs of at least `min_events` events whose index is missing or older than the run: their
    last event id, by trace id (biggest runs first)."""
    try:
        rows = store.query(
            """
            SELECT r.trace_id, r.last_event_id FROM runs r LEFT JOIN rewind_runs i USING (trace_id)
            WHERE r.events >= ? AND (i.trace_id IS NULL OR i.last_event_id <> r.last_event_id)
            ORDER BY r.events DESC, r.trace_id
            """,
            [min_events],
        )
    except duckdb.Error as exc:  # the database going away under a background reader, say
        raise StoreError(f"cannot list the runs to index: {exc}") from exc
    return dict(rows)


def last_event_of(store: Store, trace_id: str) -> int:
    """The id of run `trace_id`'s last stored event; `NotFoundError` if the store has no such run."""
    last = store.query(_LAST_EVENT, {"trace": trace_id})[0][0]
    if last is None:
        raise NotFoundError(f"no run {trace_id!r} in the store")
    return int(last)


def events_out_of_time_order(store: Store, trace_id: str) -> int:
    """How many of the run's events were stored after an event with a later timestamp."""
    rows = store.query(
        """
        SELECT count(*) FROM (
            SELECT ts < lag(ts) OVER (ORDER BY event_id) AS back FROM events WHERE trace_id = ?
        ) WHERE back
        """,
        [trace_id],
    )
    return int(rows[0][0])


def write_index(
    store: Store, trace_id: str, last_event_id: int, index: RunIndex | None, reason: str | None, *, began: float
) -> IndexState:
    """Store run `trace_id`'s index as of `last_event_id` (replacing an older one), or, with `index`
    None, that it cannot be indexed and why, so it is not tried again until it grows. `began` is the
    `time.perf_counter()` at which building it started: the row records how long it took."""
    # It writes no spans or runs: a live run's derive need not wait for it.
    with store.transaction(derives=False) as conn:
        conn.execute("DELETE FROM rewind_frames WHERE trace_id = ?", [trace_id])
        conn.execute("DELETE FROM rewind_runs WHERE trace_id = ?", [trace_id])
        if index is not None:
            write_nodes(conn, index.nodes)
            _write_frames(conn, trace_id, index.frames)
        seconds = time.perf_counter() - began
        conn.execute(
            "INSERT INTO rewind_runs (trace_id, last_event_id, indexed, reason, events, frames, seconds) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                trace_id,
                last_event_id,
                index is not None,
                reason,
                index.events if index is not None else 0,
                len(index.frames) if index is not None else 0,
                seconds,
            ],
        )
    state = index_state(store, trace_id)
    if state is None:
        raise NotFoundError(f"no run {trace_id!r} in the store")
    return state


@dataclass(frozen=True)
class IndexedCut:
    """What `core.frame_index.restore_open` needs of a fresh index at one cut."""

    rows: list[tuple[int, Any]]  # the cut event and the open frames' events before it: (event id, event)
    open_frames: list[IndexedFrame]
    sealed: list[SealedChild]


def read_cut(store: Store, trace_id: str, span_id: str, anchor: Anchor) -> IndexedCut | None:
    """What the run's fresh index holds for the cut at span `span_id`'s start (`before`) or end
    (`after`); None when the run has no fresh index or no such span edge."""
    with store.reader() as cursor:
        # One read transaction: an index rebuilt meanwhile is seen whole or not at all.
        cursor.execute("BEGIN TRANSACTION")
        fresh = cursor.execute(
            f"SELECT 1 FROM rewind_runs WHERE trace_id = $trace AND indexed AND last_event_id = ({_LAST_EVENT})",
            {"trace": trace_id},
        ).fetchall()
        if not fresh:
            return None
        edge = ":start" if anchor == "before" else ":end"
        # restore's cut: the span's first start (before) or end (after) event, in restore order.
        found = cursor.execute(
            "SELECT event_id FROM events WHERE trace_id = ? AND span_id = ? AND ends_with(type, ?) "
            "ORDER BY ts, event_id LIMIT 1",
            [trace_id, span_id, edge],
        ).fetchall()
        if not found:
            return None
        params: dict[str, Any] = {"trace": trace_id, "cut": found[0][0]}
        # In the cut: made before the cut event (or by it, after); sealed: last changed in the cut.
        made, sealed = ("created <= $cut", "last <= $cut") if anchor == "after" else ("created < $cut", "last < $cut")
        open_rows = cursor.execute(
            f"""
            WITH RECURSIVE cut_frames(frame) AS (
                SELECT frame FROM rewind_frames
                WHERE trace_id = $trace AND {"list_contains(events, $cut)" if anchor == "after" else "false"}
                UNION
                SELECT f.parent FROM rewind_frames f JOIN cut_frames c ON f.frame = c.frame
                WHERE f.trace_id = $trace AND f.parent >= 0
            )
            SELECT frame, parent, call_id, created, last, list_filter(events, lambda e: e < $cut)
            FROM rewind_frames
            WHERE trace_id = $trace AND {made}
                AND (NOT {sealed} OR frame = 0 OR frame IN (SELECT frame FROM cut_frames))
            ORDER BY frame
            """,
            params,
        ).fetchall()
        open_frames = [
            IndexedFrame(frame, parent, call_id, created, last, tuple(events), "", "running", None)
            for frame, parent, call_id, created, last, events in open_rows
        ]
        params["open"] = [frame.index for frame in open_frames]
        sealed_rows = cursor.execute(
            f"""
            SELECT f.parent, f.created, f.call_id, f.node_id, f.status, f.error,
                   n.body->'budgetState'->'aggregate'
            FROM rewind_frames f LEFT JOIN snapshot_nodes n USING (node_id)
            WHERE f.trace_id = $trace AND f.parent IN (SELECT unnest($open)) AND {made} AND {sealed}
                AND f.frame NOT IN (SELECT unnest($open))
            """,
            params,
        ).fetchall()
        ids = sorted({event for frame in open_frames for event in frame.events} | {params["cut"]})
        events = cursor.execute("SELECT event_id, body FROM events WHERE event_id = ANY($ids)", {"ids": ids})
        rows = sorted((event_id, orjson.loads(body)) for event_id, body in events.fetchall())
    children = [
        SealedChild(
            parent,
            created,
            call_id,
            node,
            status,
            orjson.loads(error) if error is not None else None,
            orjson.loads(aggregate) if aggregate is not None else None,
        )
        for parent, created, call_id, node, status, error, aggregate in sealed_rows
    ]
    return IndexedCut(rows, open_frames, children)


# A run's last stored event, from the events themselves: a live append stores its events before the
# run's summary (`runs`) is derived, and an index must not be taken as covering events it has not seen.
_LAST_EVENT = "SELECT max(event_id) FROM events WHERE trace_id = $trace"


def _write_frames(conn: Any, trace_id: str, frames: list[IndexedFrame]) -> None:
    conn.execute(
        """
        INSERT INTO rewind_frames
        SELECT $trace, unnest($frame), unnest($parent), unnest($call_id), unnest($created), unnest($last),
               unnest($node_id), unnest($status), unnest($error)::JSON, unnest($events)
        """,
        {
            "trace": trace_id,
            "frame": [frame.index for frame in frames],
            "parent": [frame.parent for frame in frames],
            "call_id": [frame.call_id for frame in frames],
            "created": [frame.created for frame in frames],
            "last": [frame.last for frame in frames],
            "node_id": [frame.node for frame in frames],
            "status": [frame.status for frame in frames],
            "error": [orjson.dumps(frame.error).decode() if frame.error is not None else None for frame in frames],
            "events": [list(frame.events) for frame in frames],
        },
    )
