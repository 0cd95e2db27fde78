"""One span in detail: what the span list knows, plus the events that open and close it."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import orjson

from devtool.store.database import Store
from devtool.store.errors import NotFoundError


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
    status: str
    error: str | None
    start_ms: float
    end_ms: float | None
    depth: int
    frame_parent_id: str | None
    content_hash: str | None
    cache: bool | None
    events: int  # events carrying this span id
    children: int  # spans whose parent it is
    start_event: dict[str, Any] | None  # an instant span's event is here
    end_event: dict[str, Any] | None

    @property
    def duration_ms(self) -> float | None:
        return None if self.end_ms is None else self.end_ms - self.start_ms


def span_detail(store: Store, trace_id: str, span_id: str) -> SpanDetail:
    """Span `span_id` of run `trace_id`; `NotFoundError` when there is none."""
    rows = store.query(
        """
        SELECT s.trace_id, s.span_id, s.parent_span_id, s.kind, s.name, s.instant, s.agent_id, s.call_id,
               s.status, s.error, s.start_ts, s.end_ts, s.depth, s.frame_parent_id, s.content_hash, s.cache,
               s.events,
               (SELECT count(*) FROM spans c WHERE c.trace_id = s.trace_id AND c.parent_span_id = s.span_id),
               (SELECT body FROM events WHERE event_id = s.start_event_id),
               (SELECT body FROM events WHERE event_id = s.end_event_id)
        FROM spans s WHERE s.trace_id = ? AND s.span_id = ?
        """,
        [trace_id, span_id],
    )
    if not rows:
        raise NotFoundError(f"no span {span_id!r} in run {trace_id!r}")
    *fields, start_body, end_body = rows[0]
    names = [f.name for f in dataclasses.fields(SpanDetail)]
    return SpanDetail(
        **dict(zip(names, fields, strict=False)),
        start_event=orjson.loads(start_body) if start_body is not None else None,
        end_event=orjson.loads(end_body) if end_body is not None else None,
    )
