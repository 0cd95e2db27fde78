"""The appender against a real store: appends are stored and published at once, derives follow behind them."""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest

from devtool.store import Store, derive
from devtool.store.event_gate import check_events
from devtool.store.queries import get_run
from devtool.web.live import Appender, Broker
from devtool.web.live.appender import _Wake, next_derive
from tests.conftest import Trace, running_run


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_an_append_is_stored_and_published_while_a_slow_derive_runs(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    broker = Broker()
    appender = Appender(store, broker)
    t, root = running_run(1)
    await appender.append(check_events(t.events), stream="test")
    await appender.drain()
    slow = derive.refresh
    deriving, release, derived = threading.Event(), threading.Event(), threading.Event()

    def slow_refresh(*args: Any, **kwargs: Any) -> Any:
        # A derive of a big run, holding the derive lock until the test lets it go (bounded, so a
        # broken appender fails rather than hangs).
        deriving.set()
        release.wait(60)
        result = slow(*args, **kwargs)
        derived.set()
        return result

    monkeypatch.setattr(derive, "refresh", slow_refresh)
    with broker.subscription(t.trace_id) as subscription:
        await appender.append(check_events(t.span("turn", root)), stream="test")  # starts the (slow) derive behind it
        assert await asyncio.to_thread(deriving.wait, 60)
        ids = await appender.append(check_events(t.span("turn", root)), stream="test")
        assert not derived.is_set()  # stored and answered while the derive still held its lock
        published = [event.event_id for event in subscription.take()]
        assert published == [4, 5, *ids]
        assert subscription.take_derived() == (0, [])
        release.set()
        await appender.drain()
        assert subscription.take_derived() == (len(t.events), [t.trace_id])
    assert get_run(store, t.trace_id).events == len(t.events)


class CountingBroker(Broker):
    """A broker that remembers each derive published to it."""

    def __init__(self) -> None:
        super().__init__()
        self.derives: list[int] = []

    def publish_derived(self, through: int, traces: Sequence[str]) -> None:
        self.derives.append(through)
        super().publish_derived(through, traces)


@pytest.mark.anyio
async def test_derives_follow_the_appends_at_most_once_per_interval_and_cover_them_all(store: Store) -> None:
    broker = CountingBroker()
    appender = Appender(store, broker, derive_interval=0.25)
    t, root = running_run(0)
    await appender.append(check_events(t.events), stream="test")
    started = time.monotonic()
    for _ in range(20):
        await appender.append(check_events(t.span("turn", root)), stream="test")
        await asyncio.sleep(0.02)
    await appender.drain()
    elapsed = time.monotonic() - started
    assert len(broker.derives) <= elapsed / 0.25 + 2
    assert broker.derives == sorted(broker.derives)
    assert broker.derives[-1] == len(t.events)
    assert get_run(store, t.trace_id).events == len(t.events)


def test_the_next_derive_waits_for_the_interval_and_as_long_as_the_last_took() -> None:
    assert next_derive(10.0, 10.01, 0.1) == pytest.approx(10.1)  # a quick derive: the interval
    assert next_derive(10.0, 10.5, 0.1) == pytest.approx(11.0)  # a slow one: as long again after it


@pytest.mark.anyio
async def test_slow_derives_leave_the_appends_half_the_time(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    appender = Appender(store, Broker())
    t, root = running_run(0)
    await appender.append(check_events(t.events), stream="test")
    await appender.drain()
    slow = derive.refresh
    derives: list[tuple[float, float]] = []

    def slow_refresh(*args: Any, **kwargs: Any) -> Any:
        started = time.monotonic()
        time.sleep(0.2)  # a derive of a long run
        result = slow(*args, **kwargs)
        derives.append((started, time.monotonic()))
        return result

    monkeypatch.setattr(derive, "refresh", slow_refresh)
    # Appends go on until three derives were paced (a loaded machine makes each derive slower, so
    # the test waits for derives, not for a fixed time), bounded so a broken appender fails.
    started = time.monotonic()
    while len(derives) < 3 and time.monotonic() - started < 30:
        await appender.append(check_events(t.span("turn", root)), stream="test")
        await asyncio.sleep(0.02)
    await appender.drain()
    assert len(derives) >= 3
    # Each derive starts no sooner than twice the last one's time after it began (back to back: once).
    for (began, ended), (next_began, _) in itertools.pairwise(derives):
        assert next_began - began >= 1.9 * (ended - began)
    assert get_run(store, t.trace_id).events == len(t.events)


@contextmanager
def writer_held(store: Store) -> Iterator[threading.Event]:
    """Another writer holds the store's writing connection until the event it yields is set (bounded,
    so a broken appender fails rather than hangs): an append taken meanwhile is in flight."""
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with store.writer():
            holding.set()
            release.wait(60)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert holding.wait(60)
        yield release
    finally:
        release.set()
        holder.join()


def whole_run(turns: int) -> Trace:
    """A small run exported whole, its root ended: what a derive in its append's transaction takes."""
    t, root = running_run(turns)
    t.end(root)
    return t


@pytest.mark.anyio
async def test_a_small_trace_goes_ahead_of_the_big_batches_pending_and_is_derived_in_its_append(store: Store) -> None:
    broker = Broker()
    appender = Appender(store, broker)
    (first, _), (ingest, ingest_root), (later, _) = running_run(40), running_run(40), running_run(40)
    small = whole_run(2)
    with broker.subscription() as everything, writer_held(store) as release:
        in_flight = asyncio.create_task(appender.append(check_events(first.events), stream="otlp"))
        await asyncio.sleep(0.1)  # taken, and waiting for the writer
        batches = [check_events(ingest.events)]
        batches.append(check_events(ingest.span("turn", ingest_root)))  # the ingest's trace's: it keeps its place
        batches += [check_events(later.events), check_events(small.events)]
        pending = [asyncio.create_task(appender.append(batch, stream="otlp")) for batch in batches]
        await asyncio.sleep(0.1)  # all four pending behind the batch in flight
        release.set()
        small_ids = await pending[3]
        # Derived in its own transaction, and that published with it: visible before the big ones are stored.
        assert get_run(store, small.trace_id).events == len(small.events)
        assert small.trace_id in everything.take_derived()[1]
        first_ids, (ingest_ids, ingest_late, later_ids, _) = await in_flight, await asyncio.gather(*pending)
        # Published (and stored: ids only grow) after the group in flight and before the big ones pending;
        # the ingest's own batches in their order.
        published = [event.event_id for event in everything.take()]
        assert published == [*first_ids, *small_ids, *ingest_ids, *ingest_late, *later_ids]
        assert published == sorted(published)
    await appender.drain()
    assert get_run(store, ingest.trace_id).events == len(ingest.events)
    assert get_run(store, later.trace_id).events == len(later.events)


@pytest.mark.anyio
async def test_small_batches_going_first_take_turns_with_the_big_ones(store: Store) -> None:
    appender = Appender(store, Broker())
    (first, _), (big, _) = running_run(40), running_run(40)
    smalls = [whole_run(2) for _ in range(20)]  # 120 events: more than one group of small ones
    with writer_held(store) as release:
        in_flight = asyncio.create_task(appender.append(check_events(first.events), stream="otlp"))
        await asyncio.sleep(0.1)
        pending = [asyncio.create_task(appender.append(check_events(t.events), stream="otlp")) for t in (big, *smalls)]
        await asyncio.sleep(0.1)
        release.set()
        await in_flight
        big_ids, *small_ids = await asyncio.gather(*pending)
    ahead = [ids for ids in small_ids if ids < big_ids]  # ids grow in store order: lists compare by their first
    # The first small ones (as many as one small group holds) went ahead; the rest waited for the big one.
    assert len(ahead) == 10
    assert ahead == small_ids[:10]


@pytest.mark.anyio
async def test_the_index_step_of_lone_small_traces_waits_for_more_but_no_derive_waits_for_it(store: Store) -> None:
    appender = Appender(store, Broker(), index_delay=60)
    smalls = [whole_run(1) for _ in range(3)]
    for t in smalls:
        await appender.append(check_events(t.events), stream="otlp")
        await asyncio.sleep(0.1)  # an index step run at once would be over by now
    # Derived with their appends, their words and prints still to make: in one step, later.
    assert all(store.unindexed.holds(t.trace_id) for t in smalls)
    live, _ = running_run(1)
    await appender.append(check_events(live.events), stream="otlp")  # a running run: left to the derive behind
    began = time.monotonic()
    while time.monotonic() - began < 30 and store.backlog:
        await asyncio.sleep(0.02)
    assert not store.backlog  # derived without waiting for the index step's delay
    assert get_run(store, live.trace_id).events == len(live.events)
    began = time.monotonic()
    await appender.drain()  # a drain does not wait out the delay either
    assert time.monotonic() - began < 30
    assert not store.unindexed


def test_the_index_step_waits_and_is_woken_on_whichever_event_loop_runs_it(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    """An app driven from one event loop, then from another (a second test client, `asyncio.run` again):
    the index step's wait is not bound to the first loop that waited."""
    appender = Appender(store, Broker(), index_delay=0.05)

    async def lone_small_trace() -> None:
        t = whole_run(1)
        await appender.append(check_events(t.events), stream="otlp")  # derived with it, its index step to come
        assert store.unindexed.holds(t.trace_id)
        began = time.monotonic()
        while store.unindexed and time.monotonic() - began < 10:
            await asyncio.sleep(0.02)  # the index step waits for more (`index_delay`), then indexes it

    with caplog.at_level(logging.ERROR, logger="devtool.web"):
        for _ in range(2):
            asyncio.run(lone_small_trace())  # a loop of its own each time
            assert not store.unindexed
        # Woken too: a drain on a third loop does not wait out a long delay.
        appender.index_delay = 60
        asyncio.run(lone_small_trace_then_drain(appender, store))
        assert not store.unindexed
    assert "could not derive" not in caplog.text


async def lone_small_trace_then_drain(appender: Appender, store: Store) -> None:
    t = whole_run(1)
    await appender.append(check_events(t.events), stream="otlp")
    await asyncio.sleep(0.1)  # the index step is waiting (for up to a minute)
    assert store.unindexed.holds(t.trace_id)
    began = time.monotonic()
    await appender.drain()
    assert time.monotonic() - began < 30


class _SetAsAWaitBegins(asyncio.SelectorEventLoop):
    """An event loop on which another thread sets `wake` as a wait makes its waiter (the first future
    made once `armed`): after the wait found it not set, before the waiter is there to be woken."""

    def __init__(self, wake: _Wake) -> None:
        super().__init__()
        self.wake = wake
        self.armed = False

    def create_future(self) -> asyncio.Future[Any]:
        if self.armed:
            self.armed = False
            setter = threading.Thread(target=self.wake.set)
            setter.start()
            setter.join()
        return super().create_future()


def test_a_set_from_another_thread_as_the_index_step_begins_to_wait_ends_the_wait() -> None:
    """Not an hour later (its timeout): the index step waits up to `INDEX_DELAY` for more to index, and a
    set from another loop's thread just then was seen only when that wait timed out."""
    wake = _Wake()
    loop = _SetAsAWaitBegins(wake)

    async def ended_at_once() -> bool:
        loop.armed = True
        waiting = asyncio.ensure_future(wake.wait(3600))
        for _ in range(3):
            await asyncio.sleep(0)  # the loop goes round: a wait that was woken, or did not wait, is done
        ended = waiting.done()
        waiting.cancel()
        await asyncio.gather(waiting, return_exceptions=True)
        return ended

    try:
        assert loop.run_until_complete(ended_at_once())
        assert not loop.armed  # the set came while the wait was beginning
    finally:
        loop.close()
