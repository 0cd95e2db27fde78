"""Finding one's way in a run: where a span sits in the frame tree, spans by text, a frame's memories.

`generation_ends` says where each frame's memory came from at a cut (restore takes a frame's memory
from its last generation end before the cut) and what the run set in it later.

`frame_path` lets the run page open the tree down to a span picked on the timeline: for each frame
ancestor it gives the span's position among its siblings (the tree's order: start time, then load
order), so the page can load just the page of children that holds it.
"""

from __future__ import annotations

from collections.abc import Collection
from contextlib import closing
from dataclasses import dataclass
from typing import Any

import orjson

from devtool.store import span_keys
from devtool.store.database import Store
from devtool.store.errors import NotFoundError
from devtool.store.queries.events import event_fields
from devtool.store.queries.unended import shown_status, unended
from devtool.store.span_sql import SHOWN, shown

MEMORY_CHARS = 64 << 10  # of a generation's memory read back for a snapshot page


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
class SpanPlace:
    """Where a span is drawn on the timeline: its row (depth), kind and start."""

    span_id: str
    depth: int
    kind: str
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
            SELECT span_id, frame_parent_id, {SHOWN}, 0, kind, agent_id, start_ts, start_event_id
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
          ON sibling.trace_id = $trace AND {shown("sibling")}
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


def span_place(store: Store, trace_id: str, span_id: str) -> SpanPlace | None:
    """Where span `span_id` is drawn (a tool result `batch#i`: its batch), or None when there is no such span."""
    rows = store.query(
        "SELECT span_id, depth, kind, start_ts FROM spans WHERE trace_id = ? AND span_id = ?",
        [trace_id, span_id.partition("#")[0]],
    )
    return SpanPlace(*rows[0]) if rows else None


def first_span_in(store: Store, trace_id: str, depth: int, kind: str, start_ms: float, end_ms: float) -> str | None:
    """The earliest span of `kind` at `depth` starting between `start_ms` and `end_ms`: what a click on a
    merged bar of the timeline selects."""
    rows = store.query(
        """
        SELECT span_id FROM spans
        WHERE trace_id = ? AND depth = ? AND kind = ? AND start_ts BETWEEN ? AND ? AND NOT instant
        ORDER BY start_ts, start_event_id LIMIT 1
        """,
        [trace_id, depth, kind, start_ms, end_ms],
    )
    return str(rows[0][0]) if rows else None


def span_hit_ranks(text: str = "$text", prefix: str = "$prefix") -> tuple[str, str]:
    """The find box's order of hits, as two SQL ranks, by name and by kind, then the earliest first
    (`span_hit_order`), whatever found them (a scan, or a keyed run's labels): the span named exactly
    `text`, then names that begin with it, then names where a word does (`web_search` for "search"),
    then names that hold it, then spans found by their agent, callId, id or error; within each, tool
    calls and agents (what a person looks for by name) before generations and turns. `text` and
    `prefix` name the parameters that hold the text and the LIKE-escaped `text%`."""
    by_name = f"""
        CASE WHEN lower(name) = lower({text}) THEN 0
             WHEN name ILIKE {prefix} ESCAPE '\\' THEN 1
             WHEN regexp_matches(name, '(?i)[^a-z0-9]' || regexp_escape({text})) THEN 2
             WHEN contains(lower(name), lower({text})) THEN 3
             ELSE 4 END"""
    return by_name, "CASE kind WHEN 'tools:execute' THEN 0 WHEN 'agent' THEN 1 ELSE 2 END"


def span_hit_order(text: str = "$text", prefix: str = "$prefix") -> str:
    """`span_hit_ranks`, then the earliest first, as SQL `ORDER BY` terms over `spans`."""
    by_name, by_kind = span_hit_ranks(text, prefix)
    return f"{by_name}, {by_kind}, start_ts, start_event_id"


def search_spans(store: Store, trace_id: str, text: str, *, limit: int = 50) -> list[SpanHit]:
    """Spans of a run whose name, agent, callId, span id or error contain `text` (case-insensitive),
    best first (`span_hit_order`): from the run's `span_text` when it is keyed, else by a scan."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    with store.reader() as cursor:
        found = span_keys.search(cursor, trace_id, text, ranks=span_hit_ranks(), prefix=f"{escaped}%", limit=limit)
        if found is not None:
            return _located_hits(store, cursor, trace_id, found)
        rows = cursor.execute(
            f"""
            SELECT {_HIT} FROM spans
            WHERE trace_id = $trace AND {SHOWN} AND (
                name ILIKE $p ESCAPE '\\' OR agent_id ILIKE $p ESCAPE '\\' OR call_id ILIKE $p ESCAPE '\\'
                OR span_id ILIKE $p ESCAPE '\\' OR error ILIKE $p ESCAPE '\\')
            ORDER BY {span_hit_order()} LIMIT $limit
            """,
            {"trace": trace_id, "text": text, "p": f"%{escaped}%", "prefix": f"{escaped}%", "limit": limit},
        ).fetchall()
        return _hits(store, cursor, trace_id, rows)


def spans_named(store: Store, trace_id: str, text: str, *, limit: int = 50) -> list[SpanHit]:
    """The earliest `limit` spans of a run whose name contains `text` (case-insensitive): from the run's
    span keys when it is keyed (its names first, a few hundred rows), else by a scan."""
    with store.reader() as cursor:
        found = span_keys.named(cursor, trace_id, text, limit=limit)
        if found is not None:
            return _located_hits(store, cursor, trace_id, found)
        rows = cursor.execute(
            f"""
            SELECT {_HIT} FROM spans WHERE trace_id = $trace AND {SHOWN} AND contains(lower(name), lower($text))
            ORDER BY start_ts, start_event_id LIMIT $limit
            """,
            {"trace": trace_id, "text": text, "limit": limit},
        ).fetchall()
        return _hits(store, cursor, trace_id, rows)


_HIT = "span_id, kind, name, agent_id, call_id, status, start_ts"


def _located_hits(store: Store, cursor: Any, trace_id: str, found: list[tuple[str, float]]) -> list[SpanHit]:
    """The hits of a keyed run's spans `found` (span id, start), read by their starts, in that order."""
    where, params = span_keys.where_located(trace_id, found)
    rows = cursor.execute(f"SELECT {_HIT} FROM spans WHERE {where}", params).fetchall()
    hits = {row[0]: row for row in rows}
    return _hits(store, cursor, trace_id, [hits[span] for span, _ in found if span in hits])


def _hits(store: Store, cursor: Any, trace_id: str, rows: list[tuple[Any, ...]]) -> list[SpanHit]:
    """Rows of `_HIT` as hits, a span without its end said as `queries/unended.py` says."""
    word = unended(store, cursor, trace_id)
    return [
        SpanHit(span, kind, name, agent, call, shown_status(status, word), start)
        for span, kind, name, agent, call, status, start in rows
    ]


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


@dataclass(frozen=True)
class GenerationEnd:
    """A generation of an agent frame that ended, and the memory it ended with (what restore keeps)."""

    call_id: str
    name: str  # `generation 0`
    ended_ms: float
    event_id: int
    memory: dict[str, Any] | None  # None: not a JSON object (or too big to read back here)


@dataclass(frozen=True)
class CutPoint:
    """Where a restore cut a run, in the order restore reads events: by timestamp, then load order."""

    ts: float
    event_id: float  # inf: every event of that timestamp
    inclusive: bool

    def keeps(self, ts: float, event_id: int) -> bool:
        """Whether an event at (`ts`, `event_id`) is before the cut, so a restore there read it."""
        here = (ts, event_id)
        return here <= (self.ts, self.event_id) if self.inclusive else here < (self.ts, self.event_id)


def cut_point(store: Store, trace_id: str, span_id: str, anchor: str) -> CutPoint | None:
    """The cut of a restore at span `span_id`: `before` keeps what precedes its start event, `after`
    everything up to its end event. None when the run has no such span (or no such event)."""
    with closing(store.reader()) as cursor:
        # Through the run's span keys when it has them: a big run's span is then read from its row group.
        where, params = span_keys.where_spans(cursor, trace_id, [span_id])
        rows = cursor.execute(
            f"SELECT start_ts, start_event_id, end_ts, end_event_id FROM spans WHERE {where}", params
        ).fetchall()
    if not rows:
        return None
    start_ts, start_id, end_ts, end_id = rows[0]
    if anchor == "before" and start_id is not None:
        return CutPoint(start_ts, start_id, inclusive=False)
    if anchor == "after" and end_id is not None:
        return CutPoint(end_ts, end_id, inclusive=True)
    return None


def generation_ends(store: Store, trace_id: str, call_ids: Collection[str]) -> dict[str, list[GenerationEnd]]:
    """The generation ends of the agent frames `call_ids` of run `trace_id`, in the order they ended."""
    if not call_ids:
        return {}
    with closing(store.reader()) as cursor:
        # A keyed run's are looked up by callId; any other run's joins its spans with themselves.
        rows = span_keys.generation_ends(cursor, trace_id, list(call_ids))
        if rows is None:
            rows = _generation_ends_scanned(cursor, trace_id, call_ids)
        memories = event_fields(cursor, [row[3] for row in rows], "$.memory", chars=MEMORY_CHARS)
    found: dict[str, list[GenerationEnd]] = {}
    for call_id, name, ended, event_id in rows:
        memory = _json_object(memories.get(event_id))
        found.setdefault(call_id, []).append(GenerationEnd(call_id, name, ended, event_id, memory))
    return found


def _generation_ends_scanned(
    cursor: Any, trace_id: str, call_ids: Collection[str]
) -> list[tuple[str, str, float, int]]:
    rows: list[tuple[str, str, float, int]] = cursor.execute(
        f"""
        SELECT a.call_id, g.name, g.end_ts, g.end_event_id
        FROM spans a JOIN spans g ON g.trace_id = a.trace_id AND g.parent_span_id = a.span_id
        WHERE a.trace_id = ? AND a.kind = 'agent' AND a.call_id IN ({", ".join("?" * len(call_ids))})
          AND g.kind = 'generation' AND g.end_event_id IS NOT NULL
        ORDER BY g.end_ts, g.end_event_id
        """,
        [trace_id, *call_ids],
    ).fetchall()
    return rows


def _json_object(text: str | None) -> dict[str, Any] | None:
    try:
        value = orjson.loads(text) if text is not None else None
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None
