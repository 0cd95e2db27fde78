"""A run's TraceEvents paired into spans, as they stream by: what the exports are written from.

`paired_spans(events)` reads events in store order (time, then load order) and yields a `Span` when
its end arrives: a `X:start` with its `X:end`, and the point events (`sys:log`, `budget:update`, ...)
that came with the span's id in between. A point event with a span id of its own is an instant
span; an end without its start (a trace cut at the front) a span that starts at its end; a start
never ended, a running span that ends with the run's last event. Memory holds only open spans.
`on_start` is told of each span as it opens, in start order (Perfetto's lanes are chosen then).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

Event = dict[str, Any]


@dataclass
class Span:
    start: Event | None
    end: Event | None = None
    points: list[Event] = field(default_factory=list)
    running: bool = False
    last_ms: float = 0.0  # the run's last time seen, the end of a running span

    @property
    def first(self) -> Event:
        found = self.start or self.end or (self.points[0] if self.points else None)
        assert found is not None
        return found

    @property
    def kind(self) -> str:
        kind = str(self.first.get("type", ""))
        if self.instant:
            return kind
        return kind.rsplit(":", 1)[0]

    @property
    def instant(self) -> bool:
        return self.start is None and self.end is None

    @property
    def trace(self) -> dict[str, str]:
        trace = self.first.get("trace") or {}
        return {key: str(trace.get(key) or "") for key in ("traceId", "spanId", "parentSpanId")}

    @property
    def fields(self) -> Event:
        """The start's fields with the end's over them (an end repeats its start's, and adds results)."""
        return {**(self.start or {}), **(self.end or {})}

    @property
    def start_ms(self) -> float:
        return float(self.first["timestamp"])

    @property
    def end_ms(self) -> float:
        if self.end is not None:
            return float(self.end["timestamp"])
        if self.running:
            return max(self.last_ms, self.start_ms)
        return max(float(point["timestamp"]) for point in self.points)

    @property
    def failed(self) -> bool:
        fields = self.fields
        return fields.get("success") is False or fields.get("error") is not None or self.kind == "error"


def paired_spans(events: Iterable[Event], on_start: Callable[[Span], None] | None = None) -> Iterator[Span]:
    """The spans of `events` (one run's, in store order), each when it closes; running ones last."""
    open_spans: dict[str, Span] = {}
    last_ms = 0.0
    for event in events:
        last_ms = max(last_ms, float(event.get("timestamp") or 0))
        kind = str(event.get("type", ""))
        span_id = str((event.get("trace") or {}).get("spanId") or "")
        if kind.endswith(":start"):
            span = Span(event)
            open_spans[span_id] = span
            if on_start is not None:
                on_start(span)
        elif kind.endswith(":end"):
            found = open_spans.pop(span_id, None)
            span = found if found is not None else Span(None)
            if span.start is None and on_start is not None:
                span.end = event
                on_start(span)
            span.end = event
            yield span
        elif span_id in open_spans:
            open_spans[span_id].points.append(event)
        else:
            span = Span(None, points=[event])
            if on_start is not None:
                on_start(span)
            yield span
    for span in open_spans.values():
        span.running = True
        span.last_ms = last_ms
        yield span
