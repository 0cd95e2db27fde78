"""The rewind index of a run, kept in the store: made once (`build_index`), read at each rewind (`restore_at`).

`devtool.core.restore_index` says what the index is; `devtool.core.restore_cut` why a rewind made
from it is the snapshot `restore_snapshot` makes. This module keeps it: each frame's row in
`rewind_frames`, the full chunks of wide frames' children in `rewind_chunks`, each frame's and
chunk's node (as the run ends) in `snapshot_nodes`, where snapshots find them, and a row per run in
`rewind_runs` that says whether the run could be indexed, up to which event, and which build of its
index to read. An index is used only while the run has no event newer than that (in `events`: a live
run's summary in `runs` may lag its events): a run that grows is rewound from its events until it is
indexed again.

Building holds neither much memory nor the write lock for long: the index walk hands over what is
final a batch of frames at a time, and each batch is written in a transaction of its own (tens of
milliseconds), under a new build number that no reader looks at until one last short transaction
names it in `rewind_runs`; the rows of the build it replaces are deleted afterwards. Live appends
to other runs wait at most one batch.

A rewind at a cut (`restore_at`) reads, all in DuckDB: the cut event, the frames the cut leaves open
(made before it, changed after it; few), how many children each has at the cut, the largest chunks
of those children the cut seals whole, the other sealed children (a chunk's worth or so per open
frame: one row each), and the events of the open frames before the cut. Nothing else of the prefix
is read, so a rewind reads and writes about as much at any cut of a run of any size.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from devtool.core.errors import RestoreError
from devtool.core.restore import IGNORED_TYPES, UNREAD_FIELDS
from devtool.core.restore_cut import OpenTree, ReusedChunk, SealedChild, restore_open
from devtool.core.restore_index import DUPLICATE_CALL_ID, Batch, IndexedFrame, NotIndexable, index_stream
from devtool.core.snapshot_tree import FANOUT
from devtool.store.database import Store
from devtool.store.errors import NotFoundError
from devtool.store.queries.events import collector_paused, iter_run_rows
from devtool.store.snapshots import write_nodes

Anchor = Literal["before", "after"]


@dataclass(frozen=True, slots=True)
class IndexState:
    """A run's rewind index as the store has it."""

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
    rows = store.query(
        """
        SELECT r.trace_id, r.last_event_id FROM runs r LEFT JOIN rewind_runs i USING (trace_id)
        WHERE r.events >= ? AND (i.trace_id IS NULL OR i.last_event_id <> r.last_event_id)
        ORDER BY r.events DESC, r.trace_id
        """,
        [min_events],
    )
    return dict(rows)


def build_index(store: Store, trace_id: str) -> IndexState:
    """Index run `trace_id` as it is now (replacing an older index); `NotFoundError` if no such run.
    A run that cannot be indexed gets a row saying why, so it is not tried again until it grows."""
    began = time.perf_counter()
    last_event_id = store.query(_LAST_EVENT, {"trace": trace_id})[0][0]
    if last_event_id is None:
        raise NotFoundError(f"no run {trace_id!r} in the store")
    with store.transaction(derives=False) as conn:
        build = int(conn.execute("SELECT nextval('rewind_builds')").fetchall()[0][0])
    writer = _Writer(store, trace_id, build)
    reason: str | None = None
    events = 0
    with collector_paused():
        try:
            _check_time_order(store, trace_id)
            rows = iter_run_rows(store, trace_id, skip_types=IGNORED_TYPES, drop_fields=UNREAD_FIELDS, by_id=True)
            events = index_stream(rows, writer)
            _check_call_ids(store, trace_id, build)
        except NotIndexable as exc:
            reason = str(exc)
    with store.transaction(derives=False) as conn:
        conn.execute("DELETE FROM rewind_runs WHERE trace_id = ?", [trace_id])
        conn.execute(
            "INSERT INTO rewind_runs (trace_id, build, last_event_id, indexed, reason, events, frames, seconds) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                trace_id,
                build,
                last_event_id,
                reason is None,
                reason,
                events if reason is None else 0,
                writer.frames if reason is None else 0,
                time.perf_counter() - began,
            ],
        )
    _drop_other_builds(store, trace_id, build if reason is None else None)
    state = index_state(store, trace_id)
    if state is None:
        raise NotFoundError(f"no run {trace_id!r} in the store")
    return state


def restore_at(store: Store, trace_id: str, span_id: str, anchor: Anchor) -> OpenTree | None:
    """The run's snapshot at the cut, from its index; None when the run has no fresh index or this
    cut is one the index does not make (then `restore_snapshot` over the run's events does)."""
    with collector_paused(), store.reader() as cursor:
        # One read transaction: an index rebuilt meanwhile is seen whole or not at all.
        cursor.execute("BEGIN TRANSACTION")
        fresh = cursor.execute(
            f"SELECT build FROM rewind_runs WHERE trace_id = $trace AND indexed AND last_event_id = ({_LAST_EVENT})",
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
        params: dict[str, Any] = {"trace": trace_id, "build": fresh[0][0], "cut": found[0][0]}
        cut = _Cut(anchor)
        open_frames = [
            IndexedFrame(frame, parent, position, call_id, created, last, tuple(events), "", "running", None)
            for frame, parent, position, call_id, created, last, events in cursor.execute(
                cut.format(_OPEN_FRAMES), params
            ).fetchall()
        ]
        params["open"] = [frame.index for frame in open_frames]
        children = dict(cursor.execute(cut.format(_CHILDREN), params).fetchall())
        params["fanout"] = FANOUT
        chunks = [ReusedChunk(*row) for row in cursor.execute(cut.format(_REUSED), params).fetchall()]
        sealed = [
            SealedChild(parent, position, call_id, node, status, orjson.loads(error) if error is not None else None)
            for parent, position, call_id, node, status, error in cursor.execute(cut.format(_SEALED), params).fetchall()
        ]
        ids = sorted({event for frame in open_frames for event in frame.events} | {params["cut"]})
        events = cursor.execute("SELECT event_id, body FROM events WHERE event_id = ANY($ids)", {"ids": ids})
        rows = sorted((event_id, orjson.loads(body)) for event_id, body in events.fetchall())
    try:
        return restore_open(
            rows,
            span_id=span_id,
            anchor=anchor,
            open_frames=open_frames,
            sealed=sealed,
            chunks=chunks,
            children=children,
        )
    except RestoreError:
        return None


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

_OPEN_FRAMES = f"""
    WITH RECURSIVE cut_frames(frame) AS (
        SELECT frame FROM rewind_frames WHERE {_OF_BUILD} AND {{changed_by_cut}}
        UNION
        SELECT f.parent FROM rewind_frames f JOIN cut_frames c ON f.frame = c.frame
        WHERE f.{_OF_BUILD.replace(" AND ", " AND f.")} AND f.parent >= 0
    )
    SELECT frame, parent, position, call_id, created, last, list_filter(events, lambda e: e < $cut)
    FROM rewind_frames
    WHERE {_OF_BUILD} AND {{made}} AND (NOT {{sealed}} OR frame = 0 OR frame IN (SELECT frame FROM cut_frames))
    ORDER BY frame
"""

# How many children each open frame has at the cut.
_CHILDREN = f"""
    SELECT parent, count(*) AS n FROM rewind_frames
    WHERE {_OF_BUILD} AND parent IN (SELECT unnest($open)) AND {{made}}
    GROUP BY parent
"""

# The chunks of open frames' children the cut seals whole (full at the cut, holding no running frame
# and not the newest child: those the root's status is read from), the largest of them.
_USABLE = f"""
    counts AS ({_CHILDREN}),
    usable AS (
        SELECT c.frame, c.level, c.position, c.node_id FROM rewind_chunks c JOIN counts k ON k.parent = c.frame
        WHERE c.{_OF_BUILD.replace(" AND ", " AND c.")} AND NOT c.running AND c.{{sealed}}
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

_REUSED = f"WITH {_USABLE} SELECT frame, level, position, node_id FROM largest"

# The sealed children of open frames outside the chunks reused.
_SEALED = f"""
    WITH {_USABLE}
    SELECT parent, position, call_id, node_id, status, error FROM rewind_frames f
    WHERE {_OF_BUILD} AND parent IN (SELECT unnest($open)) AND {{made}} AND {{sealed}}
      AND frame NOT IN (SELECT unnest($open))
      AND NOT EXISTS (
          SELECT 1 FROM largest u
          WHERE u.frame = f.parent AND f.position // CAST(pow($fanout, u.level + 1) AS BIGINT) = u.position
      )
"""


# A run's last stored event, from the events themselves: a live append stores its events before the
# run's summary (`runs`) is derived, and an index must not be taken as covering events it has not seen.
_LAST_EVENT = "SELECT max(event_id) FROM events WHERE trace_id = $trace"


class _Writer:
    """The index walk's sink: each batch in a short transaction of its own, under the build's number."""

    def __init__(self, store: Store, trace_id: str, build: int) -> None:
        self.store, self.trace_id, self.build = store, trace_id, build
        self.frames = 0

    def __call__(self, batch: Batch) -> None:
        frames, chunks = batch.frames, batch.chunks
        with self.store.transaction(derives=False) as conn:
            write_nodes(conn, batch.nodes, batch.counts)
            if frames:
                conn.execute(
                    """
                    INSERT INTO rewind_frames
                    SELECT $trace, $build, unnest($frame), unnest($parent), unnest($position), unnest($call_id),
                           unnest($created), unnest($last), unnest($node_id), unnest($status), unnest($error)::JSON,
                           unnest($events)
                    """,
                    {
                        "trace": self.trace_id,
                        "build": self.build,
                        "frame": [frame.index for frame in frames],
                        "parent": [frame.parent for frame in frames],
                        "position": [frame.position for frame in frames],
                        "call_id": [frame.call_id for frame in frames],
                        "created": [frame.created for frame in frames],
                        "last": [frame.last for frame in frames],
                        "node_id": [frame.node for frame in frames],
                        "status": [frame.status for frame in frames],
                        "error": [
                            orjson.dumps(frame.error).decode() if frame.error is not None else None for frame in frames
                        ],
                        "events": [list(frame.events) for frame in frames],
                    },
                )
            if chunks:
                conn.execute(
                    """
                    INSERT INTO rewind_chunks
                    SELECT $trace, $build, unnest($frame), unnest($level), unnest($position), unnest($last),
                           unnest($running), unnest($node_id)
                    """,
                    {
                        "trace": self.trace_id,
                        "build": self.build,
                        "frame": [chunk.frame for chunk in chunks],
                        "level": [chunk.level for chunk in chunks],
                        "position": [chunk.position for chunk in chunks],
                        "last": [chunk.last for chunk in chunks],
                        "running": [chunk.running for chunk in chunks],
                        "node_id": [chunk.node for chunk in chunks],
                    },
                )
        self.frames += len(frames)


def _check_time_order(store: Store, trace_id: str) -> None:
    """Restore reads a run by timestamp; the index compares events by id: the two orders must agree."""
    rows = store.query(
        """
        SELECT count(*) FROM (
            SELECT ts < lag(ts) OVER (ORDER BY event_id) AS back FROM events WHERE trace_id = ?
        ) WHERE back
        """,
        [trace_id],
    )
    if rows[0][0]:
        raise NotIndexable(f"its events are not stored in time order ({rows[0][0]} after later ones)")


def _check_call_ids(store: Store, trace_id: str, build: int) -> None:
    """Two agents of one parent with one callId: the second replaces the first in the full walk."""
    rows = store.query(
        f"SELECT call_id FROM rewind_frames WHERE {_OF_BUILD} GROUP BY parent, call_id HAVING count(*) > 1 LIMIT 1",
        {"trace": trace_id, "build": build},
    )
    if rows:
        raise NotIndexable(DUPLICATE_CALL_ID.format(call_id=rows[0][0][:80]))


def _drop_other_builds(store: Store, trace_id: str, keep: int | None) -> None:
    """Delete the run's index rows of every build but `keep` (its nodes stay: snapshots share them)."""
    for table in ("rewind_frames", "rewind_chunks"):
        with store.transaction(derives=False) as conn:
            conn.execute(
                f"DELETE FROM {table} WHERE trace_id = ? AND build IS DISTINCT FROM ?",
                [trace_id, keep],
            )
