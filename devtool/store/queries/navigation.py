"""Finding one's way in a run: where a span sits in the frame tree, spans by text, a frame's memories.

`frame_path` lets the run page open the tree down to a span picked on the timeline: for each frame
ancestor it gives the span's position among its siblings (the tree's order: start time, then load
order), so the page can load just the page of children that holds it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from devtool.store import span_keys
from devtool.store.database import Store
from devtool.store.errors import NotFoundError
from devtool.store.span_sql import HIDDEN_KINDS

_SHOWN = f"NOT instant AND kind NOT IN {HIDDEN_KINDS}"


@dataclass(frozen=True)
class PathStep:
    """A span on the way down to another: its index among its frame siblings, its kind and agent."""

    span_id: str
    index: int
    kind: str = ""
    agent_id: str | None = None


@dataclass(frozen=True)
class SpanHit:
    span_id: str
    kind: str
    name: str
    agent_id: str | None
    call_id: str | None
    status: str
    start_ms: float


@dataclass(frozen=True)
class Memory:
    """The memory a generation ended with (`generation:end`), and the span that carried it."""

    generation_span_id: str
    agent_span_id: str | None
    ended_ms: float
    memory: dict[str, Any]


def frame_path(store: Store, trace_id: str, span_id: str) -> list[PathStep]:
    """The frame-tree path from a root down to `span_id` (itself last), or to its nearest shown ancestor."""
    with store.reader() as cursor:
        keyed = _keyed_path(cursor, trace_id, span_id)
    if keyed is not None:
        return keyed
    rows = store.query(
        f"""
        WITH RECURSIVE up(span_id, frame_parent_id, shown, hops, kind, agent_id, start_ts, start_event_id) AS (
            SELECT span_id, frame_parent_id, {_SHOWN}, 0, kind, agent_id, start_ts, start_event_id
            FROM spans WHERE trace_id = $trace AND span_id = $span
            UNION ALL
            SELECT s.span_id, s.frame_parent_id, true, up.hops + 1, s.kind, s.agent_id, s.start_ts, s.start_event_id
            FROM spans s JOIN up ON s.trace_id = $trace AND s.span_id = up.frame_parent_id
            WHERE up.hops < 10000
        )
        -- A step's index among its siblings is how many come before it in the tree's order: counted
        -- with one join, not by numbering every sibling (a parent can have tens of thousands).
        SELECT up.span_id, count(sibling.span_id), any_value(up.kind), any_value(up.agent_id)
        FROM up LEFT JOIN spans sibling
          ON sibling.trace_id = $trace AND NOT sibling.instant AND sibling.kind NOT IN {HIDDEN_KINDS}
         AND coalesce(sibling.frame_parent_id, '') = coalesce(up.frame_parent_id, '')
         AND (sibling.start_ts < up.start_ts
              OR (sibling.start_ts = up.start_ts AND sibling.start_event_id < up.start_event_id))
        WHERE up.shown
        GROUP BY up.span_id, up.hops
        ORDER BY up.hops DESC
        """,
        {"trace": trace_id, "span": span_id},
    )
    if not rows and not store.query("SELECT 1 FROM spans WHERE trace_id = ? AND span_id = ?", [trace_id, span_id]):
        raise NotFoundError(f"no span {span_id!r} in run {trace_id!r}")
    return [PathStep(span, int(index), kind, agent) for span, index, kind, agent in rows]


def _keyed_path(cursor: Any, trace_id: str, span_id: str) -> list[PathStep] | None:
    """`frame_path` from the run's span keys: a lookup per step up, a count per step. None when the
    run is not keyed, or the span is an instant (not among the keys)."""
    found = span_keys.locate(cursor, trace_id, [span_id])
    if not found:
        return None
    key = found[span_id]
    chain = [key] if key.shown else []
    parent = key.frame_parent_id
    while parent is not None and len(chain) < 10000:
        above = span_keys.locate(cursor, trace_id, [parent]) or {}
        if parent not in above:
            break
        chain.append(above[parent])
        parent = above[parent].frame_parent_id
    chain.reverse()
    where, params = span_keys.where_located(trace_id, [(step.span_id, step.start_ts) for step in chain])
    rows = cursor.execute(f"SELECT span_id, kind, agent_id FROM spans WHERE {where}", params).fetchall()
    named = {span: (kind, agent) for span, kind, agent in rows}
    return [
        PathStep(step.span_id, span_keys.position(cursor, trace_id, step), *named.get(step.span_id, ("", None)))
        for step in chain
    ]


def search_spans(store: Store, trace_id: str, text: str, *, limit: int = 50) -> list[SpanHit]:
    """Spans of a run whose name, agent, callId, span id or error contain `text` (case-insensitive)."""
    with store.reader() as cursor:
        found = span_keys.search(cursor, trace_id, text, limit=limit)
        if found is not None:
            where, params = span_keys.where_located(trace_id, found)
            rows = cursor.execute(f"SELECT {_HIT} FROM spans WHERE {where}", params).fetchall()
            hits = {row[0]: row for row in rows}
            return [SpanHit(*hits[span]) for span, _ in found if span in hits]
    pattern = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    rows = store.query(
        f"""
        SELECT {_HIT} FROM spans
        WHERE trace_id = $trace AND {_SHOWN} AND (
            name ILIKE $p ESCAPE '\\' OR agent_id ILIKE $p ESCAPE '\\' OR call_id ILIKE $p ESCAPE '\\'
            OR span_id ILIKE $p ESCAPE '\\' OR error ILIKE $p ESCAPE '\\')
        ORDER BY start_ts, start_event_id LIMIT $limit
        """,
        {"trace": trace_id, "p": pattern, "limit": limit},
    )
    return [SpanHit(*row) for row in rows]


_HIT = "span_id, kind, name, agent_id, call_id, status, start_ts"


def generation_memories(store: Store, trace_id: str, agent_span_id: str) -> list[Memory]:
    """Every memory the agent span's generations ended with, oldest first (a reborn agent has several)."""
    with store.reader() as cursor:
        # A generation is shown in the tree, under its agent: a keyed run has them among its children.
        children = span_keys.children(cursor, trace_id, agent_span_id, offset=0, limit=10_000)
        where, params = (
            span_keys.where_located(trace_id, children) if children is not None else ("trace_id = ?", [trace_id])
        )
        generations = cursor.execute(
            f"""
            SELECT span_id, parent_span_id, end_event_id FROM spans
            WHERE {where} AND parent_span_id = ? AND kind = 'generation' ORDER BY start_ts, start_event_id
            """,
            [*params, agent_span_id],
        ).fetchall()
        ends = [end for _, _, end in generations if end is not None]
        # The ids as constants: DuckDB reads only the row groups of `events` that may hold them.
        marks = ", ".join("?" * len(ends)) or "NULL"
        ended = cursor.execute(f"SELECT event_id, ts, body->'memory' FROM events WHERE event_id IN ({marks})", ends)
        bodies = {event_id: (ts, memory) for event_id, ts, memory in ended.fetchall()}
    rows = [(span, parent, *bodies[end]) for span, parent, end in generations if end in bodies]
    return [
        Memory(span, parent, ended, memory)
        for span, parent, ended, raw in rows
        if isinstance(memory := orjson.loads(raw) if raw is not None else None, dict)
    ]
