"""The appender against a real store: appends are stored and published at once, derives follow behind them."""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections.abc import Sequence
from typing import Any

import pytest

from devtool.store import Store, derive
from devtool.store.event_gate import check_events
from devtool.store.queries import get_run
from devtool.web.live import Appender, Broker
from devtool.web.live.appender import next_derive
from tests.conftest import running_run


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
