"""The live SSE streams: one run's events (`/runs/<trace_id>/live`) and the runs list (`/live/runs`).

The endpoints (in `devtool.web.routes`) make a `Feed` and answer with `sse_response(request, feed)`.

Every message has as its SSE `id` the store position of the last event it covers. A stream starts
after `Last-Event-ID` (what a reconnecting browser sends), else after `?after=N`, else at the start
(0): it first reads what it missed from the store, in pages, then follows the broker. A client never
gets an event twice (ids only grow, and only ids above the last one sent go out) nor misses one (it
subscribes before it reads the store, and the broker publishes only what is stored).

Messages, JSON in `data`:
- `events` (run stream): `{"events": [{"id", "traceId", "spanId", "parentSpanId", "type", "timestamp"}]}`,
  sent as soon as the events are stored;
- `spans` (run stream) `{"through": N}`: the run's spans and summary now cover every event up to N
  (they are derived a moment after the events are stored: see `appender.py`); what a page redraws
  on. It has no `id`: a reconnecting browser resumes from the events it got. A stream asked with
  `?spans=M` (a page drawn from the spans up to M) sends one as soon as it has caught up, when the
  spans cover more than M by then;
- `runs` (runs list): `{"traces": [trace ids that changed]}`, once their summaries are derived;
- `resync` `{"after": N}`: the client fell `queue_limit` events behind and the broker dropped its
  queue, or it resumed from an id this store never gave (the database was replaced: N is 0); the
  stream goes on with everything after N, read from the store, so a client only needs to redraw;
- `close`: the run has ended (its root span's end arrived, and its summary says so); the page's
  `sse-close="close"` then stops the browser from reconnecting.

Bursts are coalesced: a stream sends at most one message per `live_interval` seconds (the first
event after a quiet spell goes out at once), whatever the event rate, except that a message holding
`PAGE` events goes out at once. Coalescing is for many small appends: a thousand events a second
posted one by one would otherwise be a thousand messages. A message of a thousand events is as big
as those read back from the store, and what it costs a client is its events more than its framing:
holding it back to merge with the next one saved little, and made every event of a big export (an
OTLP batch of 512 spans is 1,024 events) up to an interval later. A page refreshes its
fragments on a message, and htmx queues a refresh behind the one in flight, so it redraws no faster
than the server renders. Heartbeats are SSE comments every `live_heartbeat` seconds.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Protocol

import anyio
import orjson
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from devtool.store import NotFoundError, Store
from devtool.store.queries import events_after, get_run, last_event_id
from devtool.store.queries.live import derived_through, runs_changed_after
from devtool.web.live.broker import LiveEvent, Subscription
from devtool.web.state import state

# The most events a message read back from the store carries (a bigger gap is several messages), and
# as many as a live message waits to coalesce: one that holds them goes out at once.
PAGE = 1000
# How soon (ms) a browser reconnects after the connection drops.
RETRY_MS = 1000
# How long (s) a stream has to end by itself when the server stops, before it is cancelled.
SHUTDOWN_GRACE = 2.0
# The runs list is redrawn whole on each message: once a second is fresh enough for a list.
RUNS_INTERVAL = 1.0
MAX_EVENT_ID = 2**63 - 1  # event ids are BIGINT


class EventsMessage(ServerSentEvent):
    """An `events` message, written as sse-starlette writes any message but at once: its data is one
    line (orjson writes no line breaks) and its id and name are the stream's own, so there is nothing
    to split or clean, and a message of thousands of events is not copied and searched four times."""

    def encode(self) -> bytes:
        sep = self._sep
        return f"id: {self.id}{sep}event: {self.event}{sep}data: {self.data}{sep}{sep}".encode()


class Feed(Protocol):
    """What one kind of stream reads from the store, says about stored and derived events, and ends on."""

    store: Store
    trace_id: str | None
    interval: float  # seconds between messages, at least
    events: bool  # whether it follows stored events (else derives only)

    def missed(self, after: int) -> AsyncIterator[tuple[ServerSentEvent, int]]:
        """Messages for what the store holds after `after`, in order, each with the last id it covers."""
        ...

    def message(self, events: Sequence[LiveEvent]) -> ServerSentEvent | None:
        """The message for events just stored, if this stream sends one."""
        ...

    def derived(self, through: int, traces: Sequence[str]) -> ServerSentEvent | None:
        """The message for a derive up to `through` of `traces` (the runs this stream follows), if any."""
        ...

    async def finished(self) -> bool:
        """Whether the stream is over, as far as what was sent and derived so far says."""
        ...


class RunFeed:
    """One run's events; over when the run is (its root spans have ended and its summary says so).

    `drawn`: the last event the spans a page shows cover (its `?spans=`), when the page was drawn from
    what was derived so far (`settled.py`): a derive beyond it is told at once, as a `spans` message.
    """

    events = True

    def __init__(self, store: Store, trace_id: str, interval: float, *, drawn: int | None = None) -> None:
        self.store = store
        self.trace_id: str | None = trace_id
        self.interval = interval
        self.drawn = drawn
        # Whether the run's status is worth asking: at the start, and once a root span's end went out.
        self._may_be_over = True

    async def missed(self, after: int) -> AsyncIterator[tuple[ServerSentEvent, int]]:
        assert self.trace_id is not None
        while True:
            page = await run_in_threadpool(events_after, self.store, after, trace_id=self.trace_id, limit=PAGE)
            if page:
                after = page[-1].event_id
                yield self.message([LiveEvent.of(stored.event_id, stored.event) for stored in page]), after
            if len(page) < PAGE:
                break
        if self.drawn is None:
            return
        # A derive beyond what the page shows that committed before this stream subscribed (or while
        # the browser was away) was never told to it: tell it now.
        through = await run_in_threadpool(derived_through, self.store, self.trace_id)
        if through > self.drawn:
            self.drawn = through
            yield ServerSentEvent(data=orjson.dumps({"through": through}).decode(), event="spans"), after

    def message(self, events: Sequence[LiveEvent]) -> ServerSentEvent:
        if any(event.ends_root_span for event in events):
            self._may_be_over = True
        data = orjson.dumps({"events": [event.to_json() for event in events]}).decode()
        return EventsMessage(data=data, event="events", id=str(events[-1].event_id))

    def derived(self, through: int, traces: Sequence[str]) -> ServerSentEvent | None:
        if self.trace_id not in traces:
            return None
        return ServerSentEvent(data=orjson.dumps({"through": through}).decode(), event="spans")

    async def finished(self) -> bool:
        assert self.trace_id is not None
        # Its summary would still say running: ask again once the derive is published.
        if not self._may_be_over or self.store.backlog.holds(self.trace_id):
            return False
        try:
            run = await run_in_threadpool(get_run, self.store, self.trace_id)
        except NotFoundError:
            return False
        self._may_be_over = run.status != "running"
        return self._may_be_over


class RunsFeed:
    """The runs whose summaries changed (told by each derive, so it takes no events); never over."""

    trace_id: str | None = None
    events = False

    def __init__(self, store: Store, interval: float) -> None:
        self.store = store
        self.interval = interval

    async def missed(self, after: int) -> AsyncIterator[tuple[ServerSentEvent, int]]:
        changed = await run_in_threadpool(runs_changed_after, self.store, after)
        if changed:
            last = changed[-1][1]
            data = orjson.dumps({"traces": [trace_id for trace_id, _ in changed]}).decode()
            yield ServerSentEvent(data=data, event="runs", id=str(last)), last

    def message(self, events: Sequence[LiveEvent]) -> None:
        """None: its subscription takes no events, and a stored event changes no summary by itself."""
        return None

    def derived(self, through: int, traces: Sequence[str]) -> ServerSentEvent | None:
        if not traces:
            return None
        return ServerSentEvent(data=orjson.dumps({"traces": list(traces)}).decode(), event="runs", id=str(through))

    async def finished(self) -> bool:
        return False


async def messages(
    feed: Feed, subscription: Subscription, after: int, stopping: anyio.Event | None = None
) -> AsyncIterator[ServerSentEvent]:
    """One client's stream: what the store holds after `after`, then what is published, one message per
    `feed.interval` at most; `resync` and the store again after an overflow; `close` when the feed is over.
    It ends without `close` when the broker closes or `stopping` is set (the server is stopping)."""
    stopping = stopping or anyio.Event()
    yield ServerSentEvent(comment="devtool live", retry=RETRY_MS)
    last = after
    sent_at = 0.0
    # An id the store never gave (its database was replaced): everything the client has is stale.
    resync = after > await run_in_threadpool(last_event_id, feed.store)
    if resync:
        last = 0
    while not subscription.closed:
        # Subscribed before the store is read, so whatever is stored meanwhile is queued too.
        subscription.reset()
        if resync:
            yield ServerSentEvent(data=orjson.dumps({"after": last}).decode(), event="resync")
        async for message, covered in feed.missed(last):
            yield message
            last, sent_at = covered, time.monotonic()
        if await feed.finished():
            yield ServerSentEvent(data="{}", event="close")
            return
        while not subscription.overflowed:
            await _wait(subscription, stopping)
            if subscription.closed or stopping.is_set():
                return
            # Coalesce: whatever else arrives before the interval is up goes out in the same message,
            # unless it makes a page's worth of events already (waiting would only make it bigger).
            await subscription.fills(PAGE, sent_at + feed.interval - time.monotonic())
            if subscription.overflowed:
                break
            fresh = [event for event in subscription.take() if event.event_id > last]
            through, traces = subscription.take_derived()
            sent = [
                message
                for message in (feed.message(fresh) if fresh else None, feed.derived(through, traces))
                if message is not None
            ]
            if fresh:
                last = fresh[-1].event_id
            if not sent:
                continue
            for message in sent:
                yield message
            sent_at = time.monotonic()
            if await feed.finished():
                yield ServerSentEvent(data="{}", event="close")
                return
        resync = True


async def _wait(subscription: Subscription, stopping: anyio.Event) -> None:
    """Until the subscription has something to take, or the server is stopping."""
    async with anyio.create_task_group() as group:

        async def until(waiter: Callable[[], Awaitable[object]]) -> None:
            await waiter()
            group.cancel_scope.cancel()

        group.start_soon(until, subscription.wait)
        group.start_soon(until, stopping.wait)


def _start(request: Request) -> int | Response:
    """Where the stream starts: `Last-Event-ID`, else `?after=`, else 0; or a 400 saying what is wrong."""
    for name, value in (
        ("Last-Event-ID", request.headers.get("last-event-id")),
        ("after", request.query_params.get("after")),
    ):
        if value is None or value == "":
            continue
        return event_id(name, value)
    return 0


def event_id(name: str, value: str) -> int | Response:
    """`value` (of parameter `name`) as an event id, or a 400 saying what is wrong."""
    if not (value.isascii() and value.isdigit() and int(value) <= MAX_EVENT_ID):
        return JSONResponse({"error": f"{name} must be an event id (a whole number >= 0), got {value[:40]!r}"}, 400)
    return int(value)


def sse_response(request: Request, feed: Feed) -> Response:
    """The Server-Sent Events answer of `feed` for this client (a 400 for a bad start)."""
    start = _start(request)
    if isinstance(start, Response):
        return start
    live = state(request).live
    settings = state(request).settings

    # Set by sse-starlette when the server is stopping: the stream then ends cleanly, within the grace.
    stopping = anyio.Event()

    async def events() -> AsyncIterator[ServerSentEvent]:
        with live.broker.subscription(feed.trace_id, events=feed.events) as subscription:
            async for message in messages(feed, subscription, start, stopping):
                yield message

    return EventSourceResponse(
        events(), ping=settings.live_heartbeat, shutdown_event=stopping, shutdown_grace_period=SHUTDOWN_GRACE
    )
