"""The broker: per-run and all-runs subscriptions, bounded queues that mark a slow client for resync, close."""

from __future__ import annotations

import asyncio

import pytest
from sse_starlette import ServerSentEvent

from devtool.web.live import Broker, LiveEvent
from devtool.web.live.streams import EventsMessage


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def live_events(trace_id: str, first_id: int, count: int) -> list[LiveEvent]:
    return [LiveEvent(first_id + i, trace_id, f"{i:016x}", "", "sys:log", 1.0 + i) for i in range(count)]


def test_a_run_subscription_gets_its_run_and_an_all_subscription_every_run() -> None:
    broker = Broker()
    with broker.subscription("a") as only_a, broker.subscription() as everything:
        broker.publish([*live_events("a", 1, 2), *live_events("b", 3, 1)])
        assert [e.event_id for e in only_a.take()] == [1, 2]
        assert [e.event_id for e in everything.take()] == [1, 2, 3]
        assert broker.subscribers == 2
    assert broker.subscribers == 0


def test_a_derives_only_subscription_holds_no_events_and_hears_every_runs_derive() -> None:
    broker = Broker(queue_limit=10)
    with broker.subscription(events=False) as runs, broker.subscription("a") as only_a:
        broker.publish(live_events("a", 1, 50))
        assert runs.take() == []
        assert not runs.overflowed
        broker.publish_derived(50, ["a", "b"])
        assert runs.take_derived() == (50, ["a", "b"])
        assert only_a.take_derived() == (50, ["a"])
        assert broker.subscribers == 2
    assert broker.subscribers == 0


def test_a_client_that_falls_behind_is_marked_for_resync_and_holds_nothing() -> None:
    broker = Broker(queue_limit=100)
    with broker.subscription("a") as slow, broker.subscription("a") as fast:
        taken: list[LiveEvent] = []
        for start in range(1, 1001, 10):
            broker.publish(live_events("a", start, 10))
            taken.extend(fast.take())
        assert [e.event_id for e in taken] == list(range(1, 1001))
        assert slow.overflowed
        assert slow.take() == []
        slow.reset()
        assert not slow.overflowed
        broker.publish(live_events("a", 1001, 1))
        assert [e.event_id for e in slow.take()] == [1001]


@pytest.mark.anyio
async def test_closing_the_broker_wakes_and_ends_every_subscription() -> None:
    broker = Broker()
    with broker.subscription("a") as waiting:
        waiter = asyncio.create_task(waiting.wait())
        await asyncio.sleep(0)
        broker.close()
        assert await asyncio.wait_for(waiter, 1) is True
        assert waiting.closed
    with broker.subscription() as late:
        assert late.closed


@pytest.mark.anyio
async def test_waiting_times_out_when_nothing_is_published() -> None:
    with Broker().subscription() as subscription:
        assert await subscription.wait(0.01) is False


@pytest.mark.anyio
async def test_filling_waits_for_enough_events_else_for_the_timeout() -> None:
    broker = Broker(queue_limit=100)
    with broker.subscription("a") as subscription:
        filling = asyncio.create_task(subscription.fills(10, timeout=5))
        broker.publish(live_events("a", 1, 4))
        await asyncio.sleep(0.01)
        assert not filling.done()  # 4 of 10
        broker.publish(live_events("a", 5, 6))
        await asyncio.wait_for(filling, 1)
        began = asyncio.get_running_loop().time()
        await subscription.fills(20, timeout=0.05)  # 10 of 20, and nothing more comes
        assert asyncio.get_running_loop().time() - began >= 0.04
        overflowing = asyncio.create_task(subscription.fills(200, timeout=5))
        await asyncio.sleep(0)
        broker.publish(live_events("a", 11, 95))  # past the queue's limit: dropped, resync
        await asyncio.wait_for(overflowing, 1)
        assert subscription.overflowed
        ending = asyncio.create_task(subscription.fills(200, timeout=5))
        await asyncio.sleep(0)
        broker.close()
        await asyncio.wait_for(ending, 1)


def test_an_events_message_is_written_as_sse_starlette_writes_one() -> None:
    data = '{"events":[{"id":7,"type":"turn:end","note":"a \\\\n b"}]}'
    fields = {"data": data, "event": "events", "id": "7"}
    assert EventsMessage(**fields).encode() == ServerSentEvent(**fields).encode()
