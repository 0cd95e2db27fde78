"""A cut read from a run's frame index (`read_cut`): what `core.frame_cut.restore_open` needs to rewind.

The index's tables and how they are written are `frame_index_tables.py`'s. What a cut needs is read in
one read transaction, all in DuckDB: the cut event, the frames the cut leaves open (made before it,
changed after it; few), how many children each has at the cut, the largest chunks of those children
the cut seals whole, the other sealed children (a chunk's worth or so per open frame, one row each),
and the events of the open frames before the cut. Nothing else of the prefix is read, so a rewind
reads about as much at any cut of any run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import duckdb
import orjson

from devtool.core.frame_cut import ReusedChunk, SealedChild
from devtool.core.frame_index_records import IndexedFrame
from devtool.core.snapshot_tree import FANOUT
from devtool.store import list_param, span_keys
from devtool.store.database import Store
from devtool.store.id_lists import rows_by_ids

Anchor = Literal["before", "after"]


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
