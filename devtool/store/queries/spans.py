"""One span in detail: what the span list knows, plus the events that open and close it."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import orjson

from devtool.store import span_keys
from devtool.store.database import Store
from devtool.store.errors import NotFoundError
from devtool.store.queries.unended import shown_status, unended


@dataclass(frozen=True, slots=True)
class SpanDetail:
    trace_id: str
    span_id: str
    parent_span_id: str | None
    kind: str
    name: str
    instant: bool
    agent_id: str | None
    call_id: str | None
    status: str  # completed | failed | running | copying (`queries/unended.py`)
    error: str | None
    start_ms: float
    end_ms: float | None
    depth: int
    frame_parent_id: str | None
    content_hash: str | None
    cache: bool | None
    events: int  # events carrying this span id
    children: int  # spans the frame tree shows under it
    start_event: dict[str, Any] | None  # an instant span's event is here
    end_event: dict[str, Any] | None

    @property
    def duration_ms(self) -> float | None:
        return None if self.end_ms is None else self.end_ms - self.start_ms


def span_detail(store: Store, trace_id: str, span_id: str) -> SpanDetail:
    """Span `span_id` of run `trace_id`; `NotFoundError` when there is none."""
    with store.reader() as cursor:
        where, params = span_keys.where_spans(cursor, trace_id, [span_id])
        rows = cursor.execute(
            f"""
            SELECT trace_id, span_id, parent_span_id, kind, name, instant, agent_id, call_id, status, error,
                   start_ts, end_ts, depth, frame_parent_id, content_hash, cache, events, frame_children,
                   start_event_id, end_event_id
            FROM spans WHERE {where}
            """,
            params,
        ).fetchall()
        if not rows:
            raise NotFoundError(f"no span {span_id!r} in run {trace_id!r}")
        *fields, start_id, end_id = rows[0]
        # One equality lookup per event: DuckDB pushes `event_id = ?` into the scan and reads the body of
        # that row only (an IN list, or a correlated subquery, decompresses every body of the table).
        start_body, end_body = (
            None if event_id is None else _body(cursor, event_id) for event_id in (start_id, end_id)
        )
        word = unended(store, cursor, trace_id)
    names = [f.name for f in dataclasses.fields(SpanDetail)]
    found = dict(zip(names, fields, strict=False))
    return SpanDetail(
        **{**found, "status": shown_status(found["status"], word)},
        start_event=orjson.loads(start_body) if start_body is not None else None,
        end_event=orjson.loads(end_body) if end_body is not None else None,
    )


def _body(cursor: Any, event_id: int) -> str | None:
    rows = cursor.execute("SELECT body FROM events WHERE event_id = ?", [event_id]).fetchall()
    return rows[0][0] if rows else None
