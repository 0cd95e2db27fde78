"""A small new trace's spans and run summary, derived in Python from the rows its append just stored.

The SQL derive (`derive.py`, `run_summary.py`) is the reference and derives everything else. A lone
small trace exported whole is derived in its append's own transaction (`live_append.store_batch`),
and there the SQL derive's two big INSERTs cost what DuckDB takes to bind and plan them (~20 ms of a
lone trace's ~48 ms from export to visible; BENCHMARKS.md, issue 43) for a dozen rows. Here the
same rows are computed from the events in hand and written with one plain INSERT a table.

The events in hand are the append's own rows as `events` stored them (`RETURNING`: the insert's
projection made every column, so none is read again from the JSON here), and, for a log line's
name, its message as `span_sql.log_name` reads it. `derive` takes a trace only when they are all of
its events: no `runs` row holds it, and no derive does (`live_append`'s condition, under the write
lock). A trace with a run already (a late span of a finished trace) has events not in hand: the
caller runs the SQL derive. Every type of event is derived as the SQL does (it is generic over
types: starts, ends, points, instants, logs, budget updates, errors).

tests/test_store_small_derive_equal.py holds the two equal: for each kind of span and event, the rows
written here equal, column by column, those the SQL derive writes for the same events in another store.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import duckdb

from devtool.store import list_param, run_summary
from devtool.store.span_sql import HIDDEN_KINDS, log_name

# The `events` columns a span and a summary are made of, as the append's INSERT returns them, and the
# message that names a log line's instant span.
_EVENT_COLUMNS = (
    "event_id, source_id, trace_id, span_id, parent_span_id, type, ts, agent_id, call_id, content_hash, "
    "cache, success, label, error, prompt_tokens, completion_tokens, cost_micro_usd"
)
RETURNING = f"RETURNING {_EVENT_COLUMNS}, {log_name('body')}"

_SPAN_COLUMNS = (
    "trace_id, span_id, parent_span_id, kind, instant, name, agent_id, call_id, start_ts, end_ts, status, error, "
    "content_hash, cache, start_event_id, end_event_id, events, depth, frame_parent_id, frame_children"
)
_SPAN_NAMES = tuple(name.strip() for name in _SPAN_COLUMNS.split(","))
_SPAN_TYPES = (
    "VARCHAR, VARCHAR, VARCHAR, VARCHAR, BOOLEAN, VARCHAR, VARCHAR, VARCHAR, DOUBLE, DOUBLE, VARCHAR, VARCHAR, "
    "VARCHAR, BOOLEAN, BIGINT, BIGINT, INTEGER, INTEGER, VARCHAR, INTEGER"
)
_RUN_TYPES = (
    "VARCHAR, VARCHAR, DOUBLE, DOUBLE, VARCHAR, BIGINT, BIGINT, BIGINT, BIGINT, BIGINT, BIGINT, BIGINT, VARCHAR, "
    "BIGINT, BIGINT, DOUBLE, BIGINT, BIGINT, BIGINT, INTEGER, INTEGER, DOUBLE, VARCHAR"
)


def _rows_insert(table: str, columns: str, types: str) -> str:
    """INSERT of `table`'s rows, given as one JSON text `$rows` (a list of objects keyed by `columns`;
    `list_param` binds one text far faster than DuckDB converts a list), read as a list of structs of
    the columns' `types`."""
    names = [name.strip() for name in columns.split(",")]
    kinds = [kind.strip() for kind in types.split(",")]
    struct = ", ".join(f'"{name}": "{kind}"' for name, kind in zip(names, kinds, strict=True))
    rows = f"from_json($rows, '[{{{struct}}}]')"
    return f"INSERT INTO {table} ({', '.join(names)}) SELECT unnest({rows}, recursive := true)"


_INSERT_SPANS = _rows_insert("spans", _SPAN_COLUMNS, _SPAN_TYPES)
_INSERT_RUNS = _rows_insert("runs", ", ".join(run_summary.COLUMNS), _RUN_TYPES)


@dataclass(frozen=True, slots=True)
class Event:
    """An event as `events` stored it (the columns a derive reads), and its log message."""

    event_id: int
    source_id: int
    trace_id: str
    span_id: str
    parent_span_id: str | None
    type: str
    ts: float
    agent_id: str | None
    call_id: str | None
    content_hash: str | None
    cache: bool | None
    success: bool | None
    label: str | None
    error: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    cost_micro_usd: float | None
    message: str | None


def derive(conn: duckdb.DuckDBPyConnection, rows: Sequence[tuple[Any, ...]]) -> None:
    """Write the spans and run summaries of the traces of `rows` (tuples as `RETURNING` gives them), in
    the caller's transaction. The caller makes sure they are every event of each trace: no trace has
    a run yet, nor events a derive holds (else it derives them in SQL, `derive.refresh`)."""
    events = [Event(*row) for row in rows]
    by_trace: dict[str, list[Event]] = defaultdict(list)
    for event in sorted(events, key=lambda e: e.event_id):
        by_trace[event.trace_id].append(event)
    traces = sorted(by_trace)
    span_rows: list[dict[str, object]] = []
    run_rows: list[dict[str, object]] = []
    for trace in traces:
        spans = _spans(by_trace[trace])
        span_rows += [span.row() for span in sorted(spans, key=lambda s: s.start_ts)]
        run_rows.append(_summary(trace, by_trace[trace], spans))
    conn.execute(_INSERT_SPANS, {"rows": list_param.values(span_rows)})
    conn.execute(_INSERT_RUNS, {"rows": list_param.values(run_rows)})


@dataclass(slots=True)
class _Span:
    """A span's `spans` row while it is made (placed by `_place` after all are grouped)."""

    trace_id: str
    span_id: str
    parent_span_id: str | None
    kind: str
    instant: bool
    name: str
    agent_id: str | None
    call_id: str | None
    start_ts: float
    end_ts: float | None
    status: str
    error: str | None
    content_hash: str | None
    cache: bool | None
    start_event_id: int | None
    end_event_id: int | None
    events: int
    depth: int = 0
    frame_parent_id: str | None = None
    frame_children: int = 0

    @property
    def shown(self) -> bool:
        """`span_sql.shown`: a frame of the tree."""
        return not self.instant and self.kind not in HIDDEN_KINDS

    def row(self) -> dict[str, object]:
        return {name: getattr(self, name) for name in _SPAN_NAMES}


def _spans(events: list[Event]) -> list[_Span]:
    """The trace's spans (`span_sql.GROUPED` and `span_projection`, `derive._NEW_LIVE`), placed."""
    grouped: dict[str, list[Event]] = defaultdict(list)
    for event in events:  # in id order
        grouped[event.span_id].append(event)
    spans = [_span(group) for group in grouped.values()]
    _place(spans)
    return spans


def _span(group: list[Event]) -> _Span:
    starts = [e for e in group if e.type.endswith(":start")]
    ends = [e for e in group if e.type.endswith(":end")]
    points = [e for e in group if e not in starts and e not in ends]
    first = (starts or points or ends)[0]  # `RANK`: a start first, then a point, then an end
    end = ends[-1] if ends else None
    instant = not starts and not ends
    if starts:
        kind = first.type.removesuffix(":start")
    elif end is not None:
        kind = end.type.removesuffix(":end")
    else:
        kind = first.type
    name = first.label if first.label is not None else _bare(first.type)
    if instant and kind != "budget:update" and first.message is not None:
        name = first.message  # `span_sql.LOG_NAMES`: a log line is called by its message
    if end is not None:
        failed = end.success is False or end.error is not None
        status = "failed" if failed else "completed"
    elif starts:
        status = "running"
    else:
        failed = first.type == "error" or first.success is False or first.error is not None
        status = "failed" if failed else "completed"
    return _Span(
        trace_id=first.trace_id,
        span_id=first.span_id,
        parent_span_id=first.parent_span_id,
        kind=kind,
        instant=instant,
        name=name,
        agent_id=_either(first.agent_id, end and end.agent_id),
        call_id=_either(first.call_id, end and end.call_id),
        start_ts=first.ts if starts else min(e.ts for e in group),
        end_ts=end.ts if end is not None else (None if starts else max(e.ts for e in group)),
        status=status,
        error=_either(end and end.error, first.error),
        content_hash=_either(end and end.content_hash, first.content_hash),
        cache=_either(end and end.cache, first.cache),
        start_event_id=first.event_id if instant else (starts[0].event_id if starts else None),
        end_event_id=end.event_id if end is not None else None,
        events=len(group),
    )


def _bare(kind: str) -> str:
    """`regexp_replace(type, ':(start|end)$', '')`."""
    for suffix in (":start", ":end"):
        if kind.endswith(suffix):
            return kind.removesuffix(suffix)
    return kind


def _either(first: Any, second: Any) -> Any:
    """SQL's `coalesce` of two (a missing end's column is NULL: `end and end.x` is None then)."""
    return first if first is not None else second


def _place(spans: list[_Span]) -> None:
    """Depth, frame parent and frame children, as `derive._NEW_LIVE`'s walk: down from the spans whose
    parent is not among them (a root), each child a level deeper, its frame parent the nearest shown
    span above it; a span no walk reaches (in a parent cycle) stays at depth 0 with none."""
    ids = {span.span_id for span in spans}
    children: dict[str, list[_Span]] = defaultdict(list)
    for span in spans:
        if span.parent_span_id is not None:
            children[span.parent_span_id].append(span)
    level = [span for span in spans if span.parent_span_id not in ids]
    while level:
        below: list[_Span] = []
        for parent in level:
            for child in children.get(parent.span_id, ()):
                child.depth = parent.depth + 1
                child.frame_parent_id = parent.span_id if parent.shown else parent.frame_parent_id
                below.append(child)
        level = below
    by_id = {span.span_id: span for span in spans}
    for span in spans:
        if span.shown and span.frame_parent_id is not None:
            by_id[span.frame_parent_id].frame_children += 1


def _summary(trace: str, events: list[Event], spans: Iterable[_Span]) -> dict[str, object]:
    """The trace's `runs` row (`run_summary._REBUILD` of a new run)."""
    calls = [e for e in events if _model_request_end(e)]
    costs = [e.cost_micro_usd for e in calls if e.cost_micro_usd is not None]
    spans = list(spans)
    agents = [s for s in spans if s.kind == "agent"]
    roots = [s for s in spans if s.depth == 0 and not s.instant]
    shown = [s for s in spans if s.shown]
    best: tuple[float, str, str] | None = None
    if agents:
        best = min((s.depth * 1e15 + s.start_ts, s.span_id, s.name) for s in agents)
    elif roots:
        best = min((s.start_ts, s.span_id, s.name) for s in roots)
    if any(s.status == "running" or s.parent_span_id is not None for s in roots):
        status = "running"
    elif any(s.status == "failed" for s in roots):
        status = "failed"
    else:
        status = "completed"
    row: dict[str, object] = {
        "trace_id": trace,
        "name": best[2] if best is not None else trace,
        "started_ts": min(e.ts for e in events),
        "ended_ts": max(e.ts for e in events),
        "status": status,
        "events": len(events),
        "spans": len(shown),
        "agents": len(agents),
        "failed": sum(s.status == "failed" for s in shown),
        "running": sum(s.status == "running" for s in shown),
        "prompt_tokens": sum(e.prompt_tokens or 0 for e in calls),
        "completion_tokens": sum(e.completion_tokens or 0 for e in calls),
        "agent_ids": " ".join(sorted({s.agent_id for s in agents if s.agent_id is not None})),
        "first_event_id": events[0].event_id,
        "last_event_id": events[-1].event_id,
        "cost_micro_usd": sum(costs) if costs else None,
        "unpriced_calls": sum(e.success is True and e.cost_micro_usd is None for e in calls),
        "prompts": sum(s.kind == "turn" for s in spans),
        "tools": sum(len(s.name.split(", ")) for s in spans if s.kind == "tools:execute"),
        "source_id": events[0].source_id,
        "depth": max((s.depth for s in spans), default=0),
        "name_key": best[0] if best is not None else None,
        "name_span": best[1] if best is not None else None,
    }
    return row


def _model_request_end(event: Event) -> bool:
    """`run_summary.MODEL_REQUEST_END`."""
    return event.type == "model:call:end" or (event.type == "turn:end" and event.prompt_tokens is not None)
