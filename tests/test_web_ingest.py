"""`POST /api/v1/traces` through httpx against `create_app`: validation by index, limits, order, group commit."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import orjson
import pytest

from devtool.store import Store, load_file
from devtool.store.queries import RunSummary, events_after, get_run, run_events
from devtool.web import create_app
from devtool.web.settings import Settings
from devtool.web.state import AppState
from tests.conftest import CORPUS, Trace

URL = "/api/v1/traces"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def make_client(store: Store, **settings: Any) -> httpx2.AsyncClient:
    app = create_app(store, Settings(**settings))
    return httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://devtool")


@pytest.fixture
async def client(store: Store) -> AsyncIterator[httpx2.AsyncClient]:
    async with make_client(store) as client:
        yield client


def stored(store: Store) -> list[dict[str, Any]]:
    return [event.event for event in events_after(store, 0, limit=100_000)]


async def summary(client: httpx2.AsyncClient, store: Store, trace_id: str) -> RunSummary:
    """The run's summary as a reader sees it: a page request first derives what ingest left pending."""
    assert (await client.get("/")).status_code == 200
    return get_run(store, trace_id)


def agent_run(spans: int = 2) -> Trace:
    t = Trace()
    root = t.start("agent", agentId="poster")
    for _ in range(spans):
        t.end(t.start("turn", root))
    t.end(root, success=True)
    return t


@pytest.fixture
def corpus_trace() -> list[dict[str, Any]]:
    path = CORPUS / "rejelly" / "nested.trace.jsonl"
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


@pytest.mark.anyio
async def test_a_batch_posted_twice_is_stored_once(client: httpx2.AsyncClient, store: Store) -> None:
    t = agent_run()
    first = await client.post(URL, json=t.events[:4])
    # The exporter lost the answer and sends the batch again, now with what came since.
    again = await client.post(URL, json=t.events)
    assert first.json()["ids"] == [1, 2, 3, 4]
    assert again.status_code == 200
    answer = again.json()
    assert (answer["accepted"], answer["duplicates"], answer["rejected"]) == (6, 4, [])
    assert answer["ids"][:4] == [None] * 4
    assert 4 < answer["ids"][4] < answer["ids"][5]  # ids only grow (they may skip the duplicates' numbers)
    assert [event["trace"]["spanId"] for event in stored(store)] == [e["trace"]["spanId"] for e in t.events]
    assert (await summary(client, store, t.trace_id)).events == 6


@pytest.mark.anyio
async def test_a_batch_is_stored_and_answered_with_its_ids(client: httpx2.AsyncClient, store: Store) -> None:
    t = agent_run()
    response = await client.post(URL, json=t.events)
    assert response.status_code == 200
    assert response.json() == {"accepted": 6, "ids": [1, 2, 3, 4, 5, 6], "duplicates": 0, "rejected": []}
    assert stored(store) == t.events
    assert (await summary(client, store, t.trace_id)).status == "completed"


@pytest.mark.anyio
async def test_bad_events_are_named_by_index_and_the_good_ones_kept(client: httpx2.AsyncClient, store: Store) -> None:
    t = agent_run(1)
    batch = [t.events[0], {**t.events[1], "timestamp": "soon"}, 17, t.events[2], {"type": "agent:end"}, t.events[3]]
    response = await client.post(URL, json=batch)
    assert response.status_code == 422
    body = response.json()
    assert body["error"] == (
        "3 of 6 events rejected (event 1: \"timestamp\" is a string 'soon', not a number of milliseconds); "
        "the other 3 were stored"
    )
    assert body["rejected"] == [
        {"index": 1, "reason": "\"timestamp\" is a string 'soon', not a number of milliseconds"},
        {"index": 2, "reason": "not a JSON object but a number"},
        {"index": 4, "reason": 'no "timestamp"'},
    ]
    assert (body["accepted"], body["ids"], body["rejectedTotal"]) == (3, [1, 2, 3], 3)
    assert stored(store) == [t.events[0], t.events[2], t.events[3]]


@pytest.mark.anyio
@pytest.mark.parametrize("depth", [1_023, 1_024, 5_000])
async def test_an_event_nested_past_the_parsers_depth_is_refused_on_its_own(
    client: httpx2.AsyncClient, store: Store, depth: int
) -> None:
    t = agent_run(1)
    tricky = {**t.events[1], "props": ']}[{,\\"x'}  # brackets, a comma and quotes in a string
    deep = orjson.dumps(tricky)[:-1] + b', "deep": ' + b"[" * depth + b"]" * depth + b"}"
    body = b"[" + b", ".join([orjson.dumps(t.events[0]), deep, *map(orjson.dumps, t.events[2:])]) + b"]"
    with pytest.raises(orjson.JSONDecodeError, match="depth limit exceeded"):
        orjson.loads(body)  # what made the whole batch "not JSON" (issue 42)
    response = await client.post(URL, content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 422
    (rejected,) = response.json()["rejected"]
    assert rejected["index"] == 1
    assert rejected["reason"].endswith("objects and arrays deep, over the limit of 100")
    assert stored(store) == [t.events[0], t.events[2], t.events[3]]


@pytest.mark.anyio
@pytest.mark.parametrize("tail", [b"", b"]", b"[", b"x", b", {"])
async def test_a_deep_body_that_is_not_json_for_another_reason_too_is_a_400(
    client: httpx2.AsyncClient, store: Store, tail: bytes
) -> None:
    body = b"[{}, " + b"[" * 2_000 + b"]" * 2_000 + b"]" + tail
    response = await client.post(URL, content=body, headers={"Content-Type": "application/json"})
    assert (response.status_code, stored(store)) == ((400 if tail else 422), [])


@pytest.mark.anyio
async def test_a_batch_of_only_bad_events_stores_nothing(client: httpx2.AsyncClient, store: Store) -> None:
    response = await client.post(URL, json=[{"type": "x"}, {}])
    assert response.status_code == 422
    assert response.json()["accepted"] == 0
    assert stored(store) == []


@pytest.mark.anyio
async def test_rejections_listed_are_capped_and_counted(client: httpx2.AsyncClient) -> None:
    response = await client.post(URL, json=[{}] * 500)
    body = response.json()
    assert (response.status_code, len(body["rejected"]), body["rejectedTotal"]) == (422, 100, 500)
    assert body["rejected"][-1] == {"index": 99, "reason": 'no "type"'}


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"[{", "the body is not JSON: "),
        (b"", "the body is not JSON: "),
        (b'{"type": "agent:start"}', "the body must be a JSON array of TraceEvents, not an object"),
        (b'"events"', "the body must be a JSON array of TraceEvents, not a string"),
    ],
)
async def test_a_body_that_is_not_an_array_is_a_400(
    client: httpx2.AsyncClient, store: Store, body: bytes, message: str
) -> None:
    response = await client.post(URL, content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 400
    assert response.json()["error"].startswith(message)
    assert stored(store) == []


@pytest.mark.anyio
async def test_a_body_that_says_it_is_not_json_is_a_415(client: httpx2.AsyncClient) -> None:
    response = await client.post(URL, content=b"[]", headers={"Content-Type": "text/plain"})
    assert response.status_code == 415
    assert response.json()["error"] == "the body must be application/json (a JSON array of TraceEvents), not text/plain"


@pytest.mark.anyio
async def test_json_with_a_charset_or_no_content_type_is_taken(client: httpx2.AsyncClient) -> None:
    t = agent_run(0)
    first = await client.post(
        URL, content=orjson.dumps(t.events[:1]), headers={"Content-Type": "application/json; charset=utf-8"}
    )
    second = await client.post(URL, content=orjson.dumps(t.events[1:]))
    assert (first.status_code, second.status_code) == (200, 200)
    assert second.json()["ids"] == [2]


@pytest.mark.anyio
async def test_a_body_over_the_byte_limit_is_a_413_and_stores_nothing(store: Store) -> None:
    t = agent_run(20)
    body = orjson.dumps(t.events)
    async with make_client(store, max_ingest_bytes=len(body) - 1) as client:
        declared = await client.post(URL, content=body, headers={"Content-Type": "application/json"})

        async def chunks() -> AsyncIterator[bytes]:
            for start in range(0, len(body), 100):
                yield body[start : start + 100]

        # No Content-Length (chunked): refused once the bytes read pass the limit.
        streamed = await client.post(URL, content=chunks(), headers={"Content-Type": "application/json"})
        fits = await client.post(URL, content=orjson.dumps(t.events[:5]), headers={"Content-Type": "application/json"})
    assert declared.status_code == streamed.status_code == 413
    assert declared.json()["error"] == (
        f"the body is {len(body)} bytes, over the limit of {len(body) - 1}: send smaller batches"
    )
    assert streamed.json()["error"].startswith("the body is over ")
    assert fits.status_code == 200
    assert stored(store) == t.events[:5]


@pytest.mark.anyio
async def test_a_batch_over_the_event_limit_is_a_413_and_stores_nothing(store: Store) -> None:
    t = agent_run(4)
    async with make_client(store, max_ingest_events=9) as client:
        response = await client.post(URL, json=t.events)
    assert response.status_code == 413
    assert response.json() == {"error": "a batch of 10 events is over the limit of 9: send smaller batches"}
    assert stored(store) == []


@pytest.mark.anyio
async def test_equal_timestamps_are_stored_in_seq_order(client: httpx2.AsyncClient, store: Store) -> None:
    t = Trace()
    at = t.now
    root = t.start("agent", at=at)
    turn = t.start("turn", root, at=at)
    t.end(turn, at=at)
    t.end(root, at=at + 1)
    posted = [{**event, "_seq": seq} for seq, event in enumerate(t.events)]
    shuffled = [posted[2], posted[0], posted[3], posted[1]]
    response = await client.post(URL, json=shuffled)
    assert stored(store) == posted
    # The ids answered follow the posted order: posted[2] is the third event stored.
    assert response.json()["ids"] == [3, 1, 4, 2]
    assert (await summary(client, store, t.trace_id)).status == "completed"


@pytest.mark.anyio
async def test_the_typescript_exporters_batches_store_what_loading_its_file_stores(
    client: httpx2.AsyncClient, store: Store, tmp_path: Path, corpus_trace: list[dict[str, Any]]
) -> None:
    posted = [{**event, "_seq": seq} for seq, event in enumerate(corpus_trace)]
    for start in range(0, len(posted), 7):
        assert (await client.post(URL, json=posted[start : start + 7])).status_code == 200
    trace_id = corpus_trace[0]["trace"]["traceId"]
    live = [{k: v for k, v in event.items() if k != "_seq"} for event in run_events(store, trace_id)]
    other = Store(tmp_path / "loaded.duckdb")
    try:
        load_file(other, CORPUS / "rejelly" / "nested.trace.jsonl")
        assert live == run_events(other, trace_id)
        live_run, loaded = await summary(client, store, trace_id), get_run(other, trace_id)
        assert (live_run.name, live_run.status, live_run.spans, live_run.agents, live_run.failed) == (
            loaded.name,
            loaded.status,
            loaded.spans,
            loaded.agents,
            loaded.failed,
        )
    finally:
        other.close()


@pytest.mark.anyio
async def test_stored_batches_are_published_to_live_subscribers(store: Store) -> None:
    app = create_app(store)
    t = agent_run(1)
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://devtool") as client:
        with AppState.of(app).live.broker.subscription(t.trace_id) as subscription:
            response = await client.post(URL, json=t.events)
            published = subscription.take()
    assert [event.event_id for event in published] == response.json()["ids"]
    assert [event.type for event in published] == [event["type"] for event in t.events]


@pytest.mark.anyio
async def test_concurrent_batches_are_stored_together_each_answered_with_its_own_ids(store: Store) -> None:
    app = create_app(store)
    runs = [agent_run(3) for _ in range(20)]
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://devtool") as client:
        responses = await asyncio.gather(*(client.post(URL, json=t.events) for t in runs))
        summaries = [await summary(client, store, t.trace_id) for t in runs]
    by_id = {event.event_id: event.event for event in events_after(store, 0, limit=1000)}
    assert len(by_id) == 20 * 8
    for t, response, run in zip(runs, responses, summaries, strict=True):
        assert [by_id[i] for i in response.json()["ids"]] == t.events
        assert run.status == "completed"
    # Grouped: batches that waited for a running append were stored with the next one.
    assert AppState.of(app).live.appender.appends < 20


@pytest.mark.anyio
async def test_a_store_that_fails_gets_a_503_that_says_so(store: Store) -> None:
    async with make_client(store) as client:
        t = agent_run(0)
        assert (await client.post(URL, json=t.events[:1])).status_code == 200
        store.close()
        response = await client.post(URL, json=t.events[1:])
    assert response.status_code == 503
    assert response.json()["error"].startswith("the store could not take the batch, nothing of it was stored: ")
