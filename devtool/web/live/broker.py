"""The broker: tells open live streams about events just stored, and never waits for any of them.

`publish(events)` is called on the event loop after each append, in store order (the appender
guarantees it), with the events as `LiveEvent`s. Each `Subscription` (one per SSE client) keeps the
ones it wants in a deque of at most `queue_limit` events and is woken. A client that cannot keep up
(a slow network, a stalled tab) fills its deque: the broker then drops what it holds and marks it
`overflowed`, so its stream tells the client to resync and catches up from the store, where nothing
is lost. Publishing is O(subscribers) appends to deques: slow clients never slow ingest.

`publish_derived(through, traces)` follows each derive of live events' spans (see `appender.py`):
it tells the subscriptions of those runs (and those of every run) how far the store is derived, which
is what pages redraw on.

The broker holds no events of its own: memory is bounded by subscribers × `queue_limit`.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, NamedTuple


class LiveEvent(NamedTuple):
    """What a live stream says about one stored event: its position in the store and what it is.

    A named tuple, not a frozen dataclass: one is made for every event stored live (a thousand a
    batch under OTLP ingest), and a frozen dataclass takes 2.5 times as long to make."""

    event_id: int
    trace_id: str
    span_id: str
    parent_span_id: str
    type: str
    timestamp: float

    @classmethod
    def of(cls, event_id: int, event: Mapping[str, Any]) -> LiveEvent:
        """The live view of a stored TraceEvent (already validated, so `trace` is an object)."""
        trace = event["trace"]
        # Read as the store reads them (`from_json` to VARCHAR), so filters agree with stored rows.
        trace_id, span_id, parent, kind = (
            trace.get("traceId"),
            trace.get("spanId"),
            trace.get("parentSpanId"),
            event.get("type"),
        )
        return cls(
            event_id,
            trace_id if type(trace_id) is str else _text(trace_id),
            span_id if type(span_id) is str else _text(span_id),
            parent if type(parent) is str else _text(parent),
            kind if type(kind) is str else _text(kind),
            float(event["timestamp"]),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.event_id,
            "traceId": self.trace_id,
            "spanId": self.span_id,
            "parentSpanId": self.parent_span_id,
            "type": self.type,
            "timestamp": self.timestamp,
        }

    @property
    def ends_root_span(self) -> bool:
        """A root span's end: the moment its run may have finished."""
        return not self.parent_span_id and self.type.endswith(":end")


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)


class Subscription:
    """One client's view of the broker: the events of one run (or of all runs) since it last took them."""

    def __init__(self, trace_id: str | None, queue_limit: int) -> None:
        self.trace_id = trace_id
        self.queue_limit = queue_limit
        self._events: deque[LiveEvent] = deque()
        self._derived = 0
        self._derived_traces: set[str] = set()
        self._overflowed = False
        self._closed = False
        self._wake = asyncio.Event()
        # Set when `fill_at` events are queued (or on an overflow, or the end): what `fills` waits for.
        self._filled = asyncio.Event()
        self._fill_at: int | None = None

    @property
    def overflowed(self) -> bool:
        """True when events were dropped since the last `reset`: the store must fill the gap."""
        return self._overflowed

    @property
    def closed(self) -> bool:
        return self._closed

    def offer(self, events: Sequence[LiveEvent]) -> None:
        if self._overflowed or not events:
            return
        if len(self._events) + len(events) > self.queue_limit:
            self._events.clear()
            self._overflowed = True
        else:
            self._events.extend(events)
        self._wake.set()
        if self._fill_at is not None and (self._overflowed or len(self._events) >= self._fill_at):
            self._filled.set()

    def offer_derived(self, through: int, traces: Sequence[str]) -> None:
        """The store's spans and run summaries now cover every event up to `through` (of `traces`)."""
        self._derived = max(self._derived, through)
        self._derived_traces.update(traces)
        self._wake.set()

    def take_derived(self) -> tuple[int, list[str]]:
        """How far the store was derived when last told (0: not since subscribing), and the runs derived
        since the last take, in order."""
        traces = sorted(self._derived_traces)
        self._derived_traces.clear()
        return self._derived, traces

    def take(self) -> list[LiveEvent]:
        """The events offered since the last take, in store order."""
        taken = list(self._events)
        self._events.clear()
        if not self._overflowed and not self._closed:
            self._wake.clear()
        return taken

    def reset(self) -> None:
        """Forget what is queued: the caller reads the store next, and only later events matter."""
        self._events.clear()
        self._overflowed = False
        if not self._closed:
            self._wake.clear()

    async def wait(self, timeout: float | None = None) -> bool:
        """Wait until there is something to take, an overflow, or the end; False on timeout."""
        try:
            await asyncio.wait_for(self._wake.wait(), timeout)
        except TimeoutError:
            return False
        return True

    async def fills(self, size: int, timeout: float) -> None:
        """Wait until `size` events are queued, an overflow, or the end, for at most `timeout` seconds."""
        if timeout <= 0 or self._overflowed or self._closed or len(self._events) >= size:
            return
        self._fill_at = size
        self._filled.clear()
        try:
            await asyncio.wait_for(self._filled.wait(), timeout)
        except TimeoutError:
            pass
        finally:
            self._fill_at = None

    def close(self) -> None:
        self._closed = True
        self._wake.set()
        self._filled.set()


class Broker:
    """Fans published events out to subscriptions; owned by one app (`create_app`), on its event loop."""

    def __init__(self, *, queue_limit: int = 10_000) -> None:
        self.queue_limit = queue_limit
        self.published = 0
        self._all: set[Subscription] = set()
        self._derives_only: set[Subscription] = set()
        self._by_trace: dict[str, set[Subscription]] = {}
        self._closed = False

    @contextmanager
    def subscription(self, trace_id: str | None = None, *, events: bool = True) -> Iterator[Subscription]:
        """Subscribe to one run's events (`trace_id`) or to every event, for the `with` block; with
        `events=False`, to every run's derives only (the runs list, which redraws on nothing else)."""
        subscription = Subscription(trace_id, self.queue_limit)
        if self._closed:
            subscription.close()
        elif not events:
            self._derives_only.add(subscription)
        elif trace_id is None:
            self._all.add(subscription)
        else:
            self._by_trace.setdefault(trace_id, set()).add(subscription)
        try:
            yield subscription
        finally:
            self._all.discard(subscription)
            self._derives_only.discard(subscription)
            if trace_id is not None and (subscribers := self._by_trace.get(trace_id)) is not None:
                subscribers.discard(subscription)
                if not subscribers:
                    del self._by_trace[trace_id]

    @property
    def subscribers(self) -> int:
        return len(self._all) + len(self._derives_only) + sum(len(group) for group in self._by_trace.values())

    def publish(self, events: Sequence[LiveEvent]) -> None:
        """Offer `events` (stored, in store order) to every subscription that wants them."""
        if not events:
            return
        self.published += len(events)
        for subscription in self._all:
            subscription.offer(events)
        if not self._by_trace:
            return
        per_trace: dict[str, list[LiveEvent]] = {}
        for event in events:
            if event.trace_id in self._by_trace:
                per_trace.setdefault(event.trace_id, []).append(event)
        for trace_id, wanted in per_trace.items():
            for subscription in self._by_trace[trace_id]:
                subscription.offer(wanted)

    def publish_derived(self, through: int, traces: Sequence[str]) -> None:
        """Tell the subscriptions of `traces`, and those of every run, that the store is derived up to
        `through` (every event with an id up to it has its spans and run summary)."""
        for subscription in (*self._all, *self._derives_only):
            subscription.offer_derived(through, traces)
        for trace_id in traces:
            for subscription in self._by_trace.get(trace_id, ()):
                subscription.offer_derived(through, (trace_id,))

    def close(self) -> None:
        """End every stream (the server is stopping); later subscriptions start closed."""
        self._closed = True
        for subscription in [*self._all, *self._derives_only, *(s for group in self._by_trace.values() for s in group)]:
            subscription.close()
