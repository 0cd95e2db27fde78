"""The live streams against a real store: catch-up, coalescing, resync and close, the SSE endpoints
through httpx (the streams that end: runs that finished), and the pages' live hooks. The broker and
the appender have their own test modules."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from sse_starlette import ServerSentEvent
from starlette.testclient import TestClient

from devtool.store import Store, append_events, load_file
from devtool.store.event_gate import check_events
from devtool.store.queries import last_event_id
from devtool.web import create_app
from devtool.web.live import Appender, Broker, LiveEvent
from devtool.web.live.streams import PAGE, RunFeed, RunsFeed, messages
from testkit.sse import Message, parse
from tests.conftest import Trace, running_run
from tests.web_runs import html, one


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def decoded(message: ServerSentEvent) -> Message:
    return next(parse(message.encode().decode().splitlines()))


class Collector:
    """Reads a stream in a task of its own, as the SSE response would, keeping every message."""

    def __init__(self, stream: AsyncIterator[ServerSentEvent]) -> None:
        self.received: list[tuple[float, Message]] = []
        self._stream = stream
        self.task = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for message in self._stream:
            if message.data is not None:
                self.received.append((time.monotonic(), decoded(message)))

    @property
    def messages(self) -> list[Message]:
        return [message for _, message in self.received]

    def event_ids(self) -> list[int]:
        return [event["id"] for m in self.messages if m.event == "events" for event in m.json()["events"]]

    async def finish(self, timeout: float = 20) -> None:
        await asyncio.wait_for(self.task, timeout)


# Streams, against a real store


@pytest.mark.anyio
async def test_a_stream_sends_what_it_missed_from_the_store_then_follows_and_closes(store: Store) -> None:
    broker = Broker()
    appender = Appender(store, broker)
    t, root = running_run(3)
    append_events(store, t.events)
    with broker.subscription(t.trace_id) as subscription:
        collector = Collector(messages(RunFeed(store, t.trace_id, 0.05), subscription, 2))
        for _ in range(3):
            await appender.append(check_events(t.span("turn", root)), stream="test")
        t.end(root, success=True)
        await appender.append(check_events(t.events[-1:]), stream="test")
        await collector.finish()
    assert collector.event_ids() == list(range(3, len(t.events) + 1))
    *sent, close = collector.messages
    assert close.event == "close"
    assert {m.event for m in sent} == {"events", "spans"}
    for message in sent:
        if message.event == "events":
            assert message.id == str(message.json()["events"][-1]["id"])
        else:
            assert message.id is None  # a reconnecting browser resumes from the events it got
    throughs = [m.json()["through"] for m in sent if m.event == "spans"]
    assert throughs == sorted(throughs)
    assert throughs[-1] <= len(t.events)


@pytest.mark.anyio
async def test_events_stored_while_a_stream_catches_up_are_neither_lost_nor_doubled(store: Store) -> None:
    broker = Broker()
    appender = Appender(store, broker)
    t, root = running_run(2500)  # 5,001 events: several pages read back from the store
    append_events(store, t.events)
    with broker.subscription(t.trace_id) as subscription:
        collector = Collector(messages(RunFeed(store, t.trace_id, 0.01), subscription, 0))
        for _ in range(40):
            await appender.append(check_events(t.span("turn", root)), stream="test")
        t.end(root)
        await appender.append(check_events(t.events[-1:]), stream="test")
        await collector.finish()
    assert collector.event_ids() == list(range(1, len(t.events) + 1))


async def stream_ticks(store: Store, interval: float, ticks: int, group: int, pause: float) -> tuple[Collector, float]:
    """A running run's stream at `interval` while `ticks` log lines and the run's end are stored and
    published `group` at a time, `pause` s apart, as appends of that size would be: what the stream
    sent, and how long publishing and streaming took."""
    broker = Broker()
    t, root = running_run(0)
    append_events(store, t.events)
    with broker.subscription(t.trace_id) as subscription:
        collector = Collector(messages(RunFeed(store, t.trace_id, interval), subscription, 1))
        await asyncio.sleep(0.05)  # it has read the store and follows the broker
        for _ in range(ticks):
            t.point("sys:log", root, message="tick")
        t.end(root)
        published = list(zip(append_events(store, t.events[1:]), t.events[1:], strict=True))
        started = time.monotonic()
        for first in range(0, len(published), group):
            broker.publish([LiveEvent.of(event_id, event) for event_id, event in published[first : first + group]])
            await asyncio.sleep(pause)
        await collector.finish()
        return collector, time.monotonic() - started


@pytest.mark.anyio
async def test_bursts_are_coalesced_to_one_message_per_interval(store: Store) -> None:
    interval = 0.2
    # 61 events published one at a time, 5 ms apart, as 61 small appends would be.
    collector, elapsed = await stream_ticks(store, interval, ticks=60, group=1, pause=0.005)
    sent = [at for at, message in collector.received if message.event == "events"]
    assert collector.event_ids() == list(range(2, 63))
    assert len(sent) <= elapsed / interval + 2
    assert len(sent) < 61 / 4
    assert all(later - earlier >= interval * 0.9 for earlier, later in itertools.pairwise(sent))


@pytest.mark.anyio
async def test_a_message_of_a_page_of_events_is_not_held_back_for_the_interval(store: Store) -> None:
    interval = 5.0
    # Three big appends 20 ms apart, as OTLP exports of a thousand events each would be (the last ends the run).
    collector, elapsed = await stream_ticks(store, interval, ticks=3 * PAGE - 1, group=PAGE, pause=0.02)
    sizes = [len(message.json()["events"]) for message in collector.messages if message.event == "events"]
    assert collector.event_ids() == list(range(2, 3 * PAGE + 2))
    assert sizes == [PAGE, PAGE, PAGE]  # the first went at once (a quiet spell), the others did not wait
    assert elapsed < interval / 2


@pytest.mark.anyio
async def test_a_slow_client_is_told_to_resync_and_still_gets_every_event_once(store: Store) -> None:
    broker = Broker(queue_limit=10)
    appender = Appender(store, broker)
    t, root = running_run(0)
    await appender.append(check_events(t.events), stream="test")
    await appender.drain()
    received: list[Message] = []
    with broker.subscription(t.trace_id) as subscription:
        stream = messages(RunFeed(store, t.trace_id, 0.0), subscription, 0)
        await anext(stream)  # the opening comment
        received.append(decoded(await anext(stream)))
        # Following live: the next message goes out when the next batch is stored...
        waiting = asyncio.create_task(anext(stream))
        await appender.append(check_events(t.span("turn", root)), stream="test")
        received.append(decoded(await waiting))
        assert received[-1].event == "events"  # published when stored, before its derive
        # ...and then the client reads nothing while 100 events arrive: its queue of 10 overflows.
        for _ in range(50):
            await appender.append(check_events(t.span("tools:execute", root)), stream="test")
        assert subscription.overflowed
        t.end(root)
        await appender.append(check_events(t.events[-1:]), stream="test")
        received.extend([decoded(m) async for m in stream])
    # `spans` messages follow the derives, which run beside the appends: where they fall varies.
    kinds = [m.event for m in received if m.event != "spans"]
    assert kinds[:4] == ["events", "events", "resync", "events"]
    assert kinds[-1] == "close"
    ids = [e["id"] for m in received if m.event == "events" for e in m.json()["events"]]
    assert ids == list(range(1, len(t.events) + 1))
    assert received[2].json() == {"after": 3}


@pytest.mark.anyio
async def test_a_stream_of_a_finished_run_sends_it_and_closes_at_once(store: Store) -> None:
    t, root = running_run(1)
    t.end(root)
    append_events(store, t.events)
    with Broker().subscription(t.trace_id) as subscription:
        sent = [decoded(m) async for m in messages(RunFeed(store, t.trace_id, 0.2), subscription, 0) if m.data]
    assert [m.event for m in sent] == ["events", "close"]
    assert [e["type"] for e in sent[0].json()["events"]] == ["agent:start", "turn:start", "turn:end", "agent:end"]


@pytest.mark.anyio
async def test_a_stream_ends_when_the_server_stops(store: Store) -> None:
    broker = Broker()
    with broker.subscription("nothing-yet") as subscription:
        collector = Collector(messages(RunFeed(store, "nothing-yet", 0.01), subscription, 0))
        await asyncio.sleep(0.05)
        broker.close()
        await collector.finish(timeout=2)
    assert collector.messages == []


@pytest.mark.anyio
async def test_the_runs_stream_names_the_runs_that_changed(store: Store) -> None:
    broker = Broker()
    appender = Appender(store, broker)
    first, second, third = Trace(), Trace(), Trace()
    for t in (first, second, third):
        t.start("agent")
    append_events(store, first.events)
    append_events(store, second.events)
    with broker.subscription() as subscription:
        stream = messages(RunsFeed(store, 0.0), subscription, 1)
        await anext(stream)
        missed = decoded(await anext(stream))
        await appender.append(check_events(third.events), stream="test")
        fresh = decoded(await anext(stream))
        await stream.aclose()
    assert (missed.event, missed.json(), missed.id) == ("runs", {"traces": [second.trace_id]}, "2")
    assert (fresh.json(), fresh.id) == ({"traces": [third.trace_id]}, "3")


# The endpoints, through httpx (a finished run's stream ends, so it can be read whole)


async def get(store: Store, path: str, **headers: Any) -> httpx2.Response:
    app = create_app(store)
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://devtool") as client:
        return await client.get(path, headers=headers)


@pytest.mark.anyio
async def test_the_run_stream_resumes_after_last_event_id(store: Store) -> None:
    t, root = running_run(2)
    t.end(root)
    append_events(store, t.events)
    response = await get(store, f"/runs/{t.trace_id}/live", **{"Last-Event-ID": "3"})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["cache-control"] == "no-store"
    sent = list(parse(response.text.splitlines()))
    assert [m.event for m in sent] == ["events", "close"]
    assert [e["id"] for e in sent[0].json()["events"]] == [4, 5, 6]
    assert sent[0].id == "6"
    assert "retry: 1000" in response.text


@pytest.mark.anyio
async def test_the_header_wins_over_the_query_and_after_starts_a_stream(store: Store) -> None:
    t, root = running_run(1)
    t.end(root)
    append_events(store, t.events)
    by_query = await get(store, f"/runs/{t.trace_id}/live?after=2")
    by_header = await get(store, f"/runs/{t.trace_id}/live?after=0", **{"Last-Event-ID": "3"})
    assert [e["id"] for e in next(parse(by_query.text.splitlines())).json()["events"]] == [3, 4]
    assert [e["id"] for e in next(parse(by_header.text.splitlines())).json()["events"]] == [4]


@pytest.mark.anyio
async def test_an_id_the_store_never_gave_resyncs_from_the_start(store: Store) -> None:
    t, root = running_run(1)
    t.end(root)
    append_events(store, t.events)  # a new database: the client's id 999 came from the one before
    response = await get(store, f"/runs/{t.trace_id}/live", **{"Last-Event-ID": "999"})
    sent = list(parse(response.text.splitlines()))
    assert [m.event for m in sent] == ["resync", "events", "close"]
    assert sent[0].json() == {"after": 0}
    assert [e["id"] for e in sent[1].json()["events"]] == [1, 2, 3, 4]


@pytest.mark.anyio
@pytest.mark.parametrize(("header", "query"), [("abc", ""), (None, "?after=-1"), ("1.5", "")])
async def test_a_start_that_is_not_an_event_id_is_a_400(store: Store, header: str | None, query: str) -> None:
    headers = {"Last-Event-ID": header} if header is not None else {}
    response = await get(store, f"/runs/x/live{query}", **headers)
    assert response.status_code == 400
    assert "must be an event id (a whole number >= 0)" in response.json()["error"]


# The pages' live hooks: one listener per page, fragments that refresh on its messages


@pytest.fixture
def client(store: Store) -> Iterator[TestClient]:
    with TestClient(create_app(store)) as client:
        yield client


def test_a_running_runs_page_has_one_listener_and_refreshing_panes(client: TestClient, store: Store) -> None:
    t, root = running_run(2)
    append_events(store, t.events, stream="http")
    page = html(client.get(f"/runs/{t.trace_id}?span={root}").text)
    listener = one(page, "[sse-connect]")
    # After the last event its spans cover, which it says (`spans=`): a derive beyond is told at once.
    n = len(t.events)
    assert listener.attributes["sse-connect"] == f"/runs/{t.trace_id}/live?after={n}&spans={n}"
    assert listener.attributes["sse-close"] == "close"
    assert listener.attributes["hx-ext"] == "sse"
    for selector in ("#run-header", "#timeline", "#tree"):
        pane = one(listener, selector)
        # On `spans`, not `events`: the panes show spans, derived a moment after the events are stored.
        assert "sse:spans" in (pane.attributes["hx-trigger"] or ""), selector
    # They refresh the view the page shows: the selected span stays selected.
    assert one(page, "#timeline").attributes["hx-get"] == f"/runs/{t.trace_id}/timeline?span={root}"
    assert one(page, "#tree").attributes["hx-get"] == f"/runs/{t.trace_id}/tree?span={root}"


def test_a_finished_runs_page_does_not_listen(client: TestClient, store: Store) -> None:
    t, root = running_run(1)
    t.end(root)
    append_events(store, t.events)
    page = html(client.get(f"/runs/{t.trace_id}").text)
    assert page.css("[sse-connect]") == []
    assert page.css("[hx-trigger*='sse:']") == []


def test_the_refreshed_fragments_show_the_run_as_it_is_now(client: TestClient, store: Store) -> None:
    t, root = running_run(1)
    append_events(store, t.events)
    running = html(client.get(f"/runs/{t.trace_id}/header", headers={"HX-Request": "true"}).text)
    assert one(running, ".status-badge").text() == "running"
    turn = t.start("turn", root)
    t.end(turn)
    t.end(root)
    append_events(store, t.events[3:])
    header = html(client.get(f"/runs/{t.trace_id}/header", headers={"HX-Request": "true"}).text)
    assert one(header, ".status-badge").text() == "completed"
    assert one(header, "#run-header").attributes.get("hx-trigger") is None
    tree = html(client.get(f"/runs/{t.trace_id}/tree", headers={"HX-Request": "true"}).text)
    assert one(tree, f"#node-{turn}")
    assert one(tree, "#tree").attributes.get("hx-trigger") is None


def test_the_runs_page_listens_once_and_badges_live_runs(client: TestClient, store: Store, tmp_path: Path) -> None:
    streaming, _ = running_run(1)
    append_events(store, streaming.events, stream="http")
    finished, root = running_run(1)
    finished.end(root)
    append_events(store, finished.events, stream="http")
    loaded, _ = running_run(1)  # a trace file cut before its end: running, but nothing is streaming it
    load_file(store, loaded.write(tmp_path / "cut.jsonl"))
    page = html(client.get("/").text)
    listener = one(page, "[sse-connect]")
    assert listener.attributes["sse-connect"] == f"/live/runs?after={last_event_id(store)}"
    results = one(listener, "#runs-results")
    assert (results.attributes["hx-trigger"], results.attributes["hx-include"]) == ("sse:runs", "#runs-filter")
    badged = [row.attributes["data-trace-id"] for row in page.css("tr.run-row") if row.css(".live-badge")]
    assert badged == [streaming.trace_id]
