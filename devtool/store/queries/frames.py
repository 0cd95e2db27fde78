"""The frame tree of a run: agent → generation → turn / tool batch → tool result, loaded a page at a time.

The tree shows the spans a person thinks in (runs, agents, generations, turns, tool batches, custom
spans and unknown span kinds) and looks through the others (a `promptAgent` loop, a model call,
instant events): their children hang from the nearest shown ancestor (`spans.frame_parent_id`). A tool
batch's children are the tool results of its end event.

A run can have tens of thousands of agents under one parent, so nothing here returns a whole tree.
`frame_tree` expands breadth-first from the roots (or from one span) for `depth` levels, at most
`page_size` children per node and `max_nodes` nodes in all; every node says how many children it
has, so the UI draws "N more" and asks for the next page with `span_id=` and `offset=`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from typing import Any

import orjson

from devtool.store import list_param, span_keys
from devtool.store.database import Store
from devtool.store.errors import NotFoundError
from devtool.store.queries.events import event_fields
from devtool.store.queries.unended import shown_status, unended
from devtool.store.span_sql import SHOWN

TOOL_RESULT = "tool"
_CROWD = 1000  # children past which a parent's page is a query of its own

_COLUMNS = (
    "span_id, kind, name, agent_id, call_id, status, start_ts, end_ts, content_hash, cache, error, "
    "frame_children, end_event_id, start_event_id"
)
PROPS_SHOWN = 60  # characters of an agent's props summary


@dataclass(frozen=True, slots=True)
class FrameNode:
    """One node of the tree. `children` is the loaded page; `child_count` counts them all."""

    span_id: str  # a tool result's is "<batch span id>#<index>"
    kind: str  # runWith, agent, generation, turn, tools:execute, tool, custom:span, ...
    name: str
    agent_id: str | None
    call_id: str | None
    status: str  # completed | failed | running | copying (`queries/unended.py`)
    start_ms: float
    end_ms: float | None
    content_hash: str | None
    cache: bool | None
    error: str | None
    child_count: int
    children: tuple[FrameNode, ...] = ()
    children_offset: int = 0
    # An agent with a sibling of its own agent id (three `researcher`s): its call index and its first
    # props, short (`topic="rust"`), tell them apart.
    twin: bool = False
    props: str | None = None

    @property
    def call_index(self) -> int | None:
        """An agent's place among the calls of its agent id in its parent (`…/agent:worker:2` → 2)."""
        seq = (self.call_id or "").rsplit(":", 1)[-1]
        return int(seq) if self.kind == "agent" and seq.isdigit() else None

    @property
    def duration_ms(self) -> float | None:
        return None if self.end_ms is None else self.end_ms - self.start_ms

    @property
    def collapsed(self) -> bool:
        """It has children, none of them loaded."""
        return self.child_count > 0 and not self.children

    @property
    def more(self) -> int:
        """Children after the loaded page."""
        return max(0, self.child_count - self.children_offset - len(self.children))


@dataclass(frozen=True, slots=True)
class FrameTree:
    """The roots of a run's tree, or the one span asked for, with what was loaded below."""

    trace_id: str
    nodes: tuple[FrameNode, ...]
    root_count: int  # how many roots the run has (when `nodes` are roots)
    offset: int = 0


@dataclass
class _Draft:
    node: FrameNode
    end_event_id: int | None
    start_event_id: int | None = None
    children: list[_Draft] = field(default_factory=list)

    def build(self, word: str) -> FrameNode:
        """The node and its loaded children, a span without its end said `word` (`queries/unended.py`)."""
        children = tuple(child.build(word) for child in self.children)
        return replace(self.node, status=shown_status(self.node.status, word), children=children)


def frame_tree(
    store: Store,
    trace_id: str,
    *,
    span_id: str | None = None,
    depth: int = 3,
    page_size: int = 50,
    offset: int = 0,
    max_nodes: int = 500,
) -> FrameTree:
    """The tree from the run's roots (or from `span_id`), `depth` levels down, a page per node.

    `offset` pages through the top level: the roots, or `span_id`'s children.
    """
    with store.reader() as cursor:
        if span_id is None:
            where = f"trace_id = ? AND frame_parent_id IS NULL AND {SHOWN}"
            root_count = span_keys.count(cursor, trace_id, None)
            if root_count is None:
                root_count = cursor.execute(f"SELECT count(*) FROM spans WHERE {where}", [trace_id]).fetchall()[0][0]
            if root_count == 0 and not cursor.execute("SELECT 1 FROM runs WHERE trace_id = ?", [trace_id]).fetchall():
                raise NotFoundError(f"no run {trace_id!r} in the store")
            roots = span_keys.children(cursor, trace_id, None, offset=offset, limit=page_size)
            if roots is not None:
                top = _located(cursor, trace_id, roots)
            else:
                rows = cursor.execute(
                    f"SELECT {_COLUMNS} FROM spans WHERE {where} ORDER BY start_ts, start_event_id LIMIT ? OFFSET ?",
                    [trace_id, page_size, offset],
                ).fetchall()
                top = [_draft(row) for row in rows]
            child_offset = 0
        else:
            where, params = span_keys.where_spans(cursor, trace_id, [span_id])
            top = [
                _draft(row) for row in cursor.execute(f"SELECT {_COLUMNS} FROM spans WHERE {where}", params).fetchall()
            ]
            if not top:
                raise NotFoundError(f"no span {span_id!r} in run {trace_id!r}")
            root_count, child_offset = 1, offset
        budget = max_nodes - len(top)
        frontier = top
        for level in range(depth):
            _count_tool_results(cursor, frontier)
            parents = [d for d in frontier if d.node.child_count > 0]
            if not parents or budget <= 0:
                break
            frontier = _load_children(cursor, trace_id, parents, child_offset if level == 0 else 0, page_size, budget)
            budget -= len(frontier)
        else:
            _count_tool_results(cursor, frontier)
        _add_props(cursor, _twins(top))
        word = unended(store, cursor, trace_id)
    return FrameTree(trace_id, tuple(d.build(word) for d in top), root_count, offset if span_id is None else 0)


def _draft(row: tuple[Any, ...]) -> _Draft:
    *fields, end_event_id, start_event_id = row
    return _Draft(FrameNode(*fields), end_event_id, start_event_id)


def _twins(siblings: list[_Draft]) -> list[_Draft]:
    """The loaded agents that share their agent id with a loaded sibling, marked `twin`."""
    names = Counter(d.node.agent_id for d in siblings if d.node.kind == "agent")
    found = []
    for draft in siblings:
        if draft.node.kind == "agent" and names[draft.node.agent_id] > 1:
            draft.node = replace(draft.node, twin=True)
            found.append(draft)
        found.extend(_twins(draft.children))
    return found


def _add_props(cursor: Any, drafts: list[_Draft]) -> None:
    """Each twin agent's props summary, read from its start event."""
    agents = {d.start_event_id: d for d in drafts if d.start_event_id is not None}
    for event_id, raw in event_fields(cursor, agents, "$.props").items():
        draft = agents[event_id]
        draft.node = replace(draft.node, props=props_summary(raw))


def props_summary(raw: str | None) -> str | None:
    """`topic="rust", question="Should our…"`: an agent's first props, each value cut short."""
    if raw is None:
        return None
    try:
        props = orjson.loads(raw)
    except orjson.JSONDecodeError:
        props = raw  # cut off by the 2,000 characters read: shown as text
    if isinstance(props, dict):
        parts = [
            f"{key}={_short(value)}" for key, value in list(props.items())[:3] if not isinstance(value, dict | list)
        ]
        text = ", ".join(parts) or ", ".join(list(props)[:3])
    else:
        text = _short(props)
    return (text[: PROPS_SHOWN - 1] + "…") if len(text) > PROPS_SHOWN else (text or None)


def _short(value: Any) -> str:
    text = orjson.dumps(value).decode() if not isinstance(value, str) else f'"{value}"'
    return text if len(text) <= 28 else text[:26] + "…" + text[-1]


def _located(cursor: Any, trace_id: str, located: list[tuple[str, float]]) -> list[_Draft]:
    """The spans of the run whose ids and starts are `located`, in that order."""
    if len(located) > 1:
        # A page of them by their starts alone, the ids picked here: DuckDB 1.5 filters the row groups by
        # a list of numbers in half the CPU it takes for a list of ids (a string compared a row).
        starts = [start for _, start in located]
        sql = (
            f"SELECT {_COLUMNS} FROM spans WHERE trace_id = $trace AND start_ts BETWEEN $first AND $last "
            f"AND start_ts IN (SELECT unnest({list_param.of('starts', 'DOUBLE')}))"
        )
        params: Any = {"trace": trace_id, "first": min(starts), "last": max(starts)}
        params["starts"] = list_param.values(starts)
    else:
        where, params = span_keys.where_located(trace_id, located)
        sql = f"SELECT {_COLUMNS} FROM spans WHERE {where}"
    rows = {row[0]: row for row in cursor.execute(sql, params).fetchall()}
    return [_draft(rows[span]) for span, _ in located if span in rows]


def _count_tool_results(cursor: Any, drafts: list[_Draft]) -> None:
    """A tool batch's children are the results its end event lists: count them there."""
    batches = [d for d in drafts if d.node.kind == "tools:execute" and d.end_event_id is not None]
    if not batches:
        return
    ids = [d.end_event_id for d in batches if d.end_event_id is not None]
    # The range lets DuckDB skip the row groups it cannot hold (zone maps on event_id); the IN list
    # alone would decompress every event body of the table.
    counts = dict(
        cursor.execute(
            "SELECT event_id, coalesce(json_array_length(body, '$.toolResults'), 0) FROM events "
            f"WHERE event_id BETWEEN ? AND ? AND event_id IN ({_placeholders(ids)})",
            [min(ids), max(ids), *ids],
        ).fetchall()
    )
    for d in batches:
        d.node = replace(d.node, child_count=int(counts.get(d.end_event_id, 0)))


def _load_children(
    cursor: Any, trace_id: str, parents: list[_Draft], offset: int, page_size: int, budget: int
) -> list[_Draft]:
    loaded: list[_Draft] = []
    spans = [d for d in parents if d.node.kind != "tools:execute"]
    # A parent of thousands is paged on its own (a top-N, not a sort of all its children).
    for parent in (d for d in spans if d.node.child_count > _CROWD):
        size = min(page_size, budget - len(loaded))
        ids = span_keys.children(cursor, trace_id, parent.node.span_id, offset=offset, limit=size)
        if ids is not None:
            parent.children.extend(_located(cursor, trace_id, ids))
        else:
            rows = cursor.execute(
                f"SELECT {_COLUMNS} FROM spans WHERE trace_id = ? AND {SHOWN} AND frame_parent_id = ? "
                "ORDER BY start_ts, start_event_id LIMIT ? OFFSET ?",
                [trace_id, parent.node.span_id, size, offset],
            ).fetchall()
            parent.children.extend(_draft(row) for row in rows)
        parent.node = replace(parent.node, children_offset=offset)
        loaded.extend(parent.children)
        if len(loaded) >= budget:
            return loaded
    few = {d.node.span_id: d for d in spans if d.node.child_count <= _CROWD}
    pages = span_keys.children_of(cursor, trace_id, sorted(few), offset=offset, limit=page_size) if few else None
    if pages is not None:
        # By position first, then parent: a short budget gives every parent its first children.
        order = sorted((i, parent_id, found) for parent_id, page in pages.items() for i, found in enumerate(page))
        order = order[: budget - len(loaded)]
        drafts = {d.node.span_id: d for d in _located(cursor, trace_id, [found for _, _, found in order])}
        for _, parent_id, (span, _) in order:
            if span in drafts:
                few[parent_id].children.append(drafts[span])
                loaded.append(drafts[span])
        for d in few.values():
            d.node = replace(d.node, children_offset=offset)
    elif few:
        rows = cursor.execute(
            f"""
            SELECT frame_parent_id, {_COLUMNS} FROM (
                SELECT *, row_number() OVER (PARTITION BY frame_parent_id ORDER BY start_ts, start_event_id) - 1 AS i
                FROM spans WHERE trace_id = ? AND {SHOWN} AND frame_parent_id IN ({_placeholders(few)})
            ) WHERE i >= ? AND i < ? ORDER BY i, frame_parent_id LIMIT ?
            """,
            [trace_id, *few, offset, offset + page_size, budget - len(loaded)],
        ).fetchall()
        # Ordered by position first, so a short budget gives every parent its first children.
        for row in rows:
            child = _draft(row[1:])
            few[row[0]].children.append(child)
            loaded.append(child)
        for d in few.values():
            d.node = replace(d.node, children_offset=offset)
    for batch in (d for d in parents if d.node.kind == "tools:execute"):
        if len(loaded) >= budget:
            break
        results = _tool_results(cursor, batch, offset, min(page_size, budget - len(loaded)))
        batch.children.extend(results)
        batch.node = replace(batch.node, children_offset=offset)
        loaded.extend(results)
    return loaded


def _placeholders(values: Collection[object]) -> str:
    return ", ".join("?" * len(values))


def _tool_results(cursor: Any, batch: _Draft, offset: int, limit: int) -> list[_Draft]:
    if batch.end_event_id is None:
        return []
    rows = cursor.execute("SELECT body->'toolResults' FROM events WHERE event_id = ?", [batch.end_event_id])
    results = orjson.loads(rows.fetchall()[0][0] or "[]")
    drafts = []
    parent = batch.node
    for index, result in list(enumerate(results))[offset : offset + limit]:
        if not isinstance(result, dict):
            continue
        failed = result.get("success") is False or result.get("error") is not None
        error = result.get("error")
        node = FrameNode(
            span_id=f"{parent.span_id}#{index}",
            kind=TOOL_RESULT,
            name=str(result.get("toolName") or "tool"),
            agent_id=parent.agent_id,
            call_id=_call_path(result),
            status="failed" if failed else "completed",
            start_ms=parent.start_ms,
            end_ms=(parent.start_ms + result["duration"]) if isinstance(result.get("duration"), int | float) else None,
            content_hash=result.get("contentHash") if isinstance(result.get("contentHash"), str) else None,
            cache=result.get("cache") if isinstance(result.get("cache"), bool) else None,
            error=(error.get("message") if isinstance(error, dict) else str(error)) if error is not None else None,
            child_count=0,
        )
        drafts.append(_Draft(node, None))
    return drafts


def _call_path(result: dict[str, Any]) -> str | None:
    """A tool result's callId of ours: `callPath` (traces written before it had it in `callId`, which
    is the model's id for the call in the TypeScript library's and in ours now)."""
    path = result.get("callPath", result.get("callId"))
    return path if isinstance(path, str) else None
