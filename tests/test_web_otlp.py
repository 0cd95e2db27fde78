"""`POST /v1/traces` (OTLP/HTTP) against `create_app`: both encodings, gzip, partial success, refusals;
read in the server's threads and in a worker process."""

from __future__ import annotations

import copy
import gzip
import multiprocessing
import os
import signal
import tracemalloc
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import orjson
import pytest
from google.protobuf.json_format import ParseDict
from google.rpc.status_pb2 import Status
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest, ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from selectolax.lexbor import LexborHTMLParser as HTMLParser

from devtool.actions.run_rewind import RewindError, rewind
from devtool.store import Store
from devtool.store.queries import get_run, run_events
from devtool.web import create_app
from devtool.web.settings import Settings
from devtool.web.state import AppState
from tests.otlp_factory import CORPUS, T0, genai_run, log_record, logs_request, request, span
from tests.test_formats_otlp_logs import base64_ids, chat_messages_as_logs
from tests.test_formats_otlp_proto import protobuf

URL = "/v1/traces"
LOGS = "/v1/logs"
JSON = {"content-type": "application/json"}
PROTOBUF = {"content-type": "application/x-protobuf"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=[0, 1], ids=["read-in-the-server", "read-in-a-worker"])
async def client(store: Store, request: pytest.FixtureRequest) -> AsyncIterator[httpx2.AsyncClient]:
    """A client of an app that reads OTLP requests in its own threads, or in a worker process (as
    `devtool serve` does): every test here holds for both."""
    app = create_app(
        store, Settings(max_ingest_bytes=1 << 20, max_ingest_events=100, otlp_workers=request.param, otlp_small_body=0)
    )
    reader = AppState.of(app).live.otlp_reader
    try:
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://devtool") as client:
            yield client
    finally:
        reader.close()


def protobuf_logs(document: dict[str, Any]) -> bytes:
    return bytes(ParseDict(base64_ids(copy.deepcopy(document)), ExportLogsServiceRequest()).SerializeToString())


def count(store: Store) -> int:
    return int(store.query("SELECT count(*) FROM events")[0][0])


@pytest.mark.anyio
async def test_protobuf_and_json_bodies_store_the_same_run(client: httpx2.AsyncClient, store: Store) -> None:
    document = genai_run("5" * 32)
    answer = await client.post(URL, content=protobuf(document), headers=PROTOBUF)
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "application/x-protobuf"
    assert not ExportTraceServiceResponse.FromString(answer.content).HasField("partial_success")
    as_json = orjson.dumps(document).replace(b"5" * 32, b"6" * 32)
    answer = await client.post(URL, content=as_json, headers=JSON)
    assert (answer.status_code, answer.json()) == (200, {})
    assert (await client.get("/")).status_code == 200  # a page derives what the appender left pending
    by_protobuf, by_json = run_events(store, "5" * 32), run_events(store, "6" * 32)
    for event in by_protobuf + by_json:
        event["trace"]["traceId"] = "-"
    assert by_protobuf == by_json
    run = get_run(store, "5" * 32)
    assert (run.name, run.spans, run.from_opentelemetry) == ("weather_agent", 4, True)


@pytest.mark.anyio
async def test_a_gzip_body_is_read(client: httpx2.AsyncClient, store: Store) -> None:
    body = gzip.compress(protobuf(CORPUS[1]))
    answer = await client.post(URL, content=body, headers={**PROTOBUF, "content-encoding": "gzip"})
    assert answer.status_code == 200
    assert count(store) == 8


@pytest.mark.anyio
async def test_refused_spans_are_a_partial_success_and_the_rest_is_stored(
    client: httpx2.AsyncClient, store: Store
) -> None:
    good = span("good", {"gen_ai.operation.name": "chat"})
    bad = span("bad", sid="00f067aa0ba902b7")
    bad["traceId"] = "00"
    answer = await client.post(URL, content=orjson.dumps(request(good, bad)), headers=JSON)
    assert answer.status_code == 200
    partial = answer.json()["partialSuccess"]
    assert partial["rejectedSpans"] == 1
    assert "resourceSpans[0].scopeSpans[0].spans[1]: traceId '00' is not 32 hex digits" in partial["errorMessage"]
    assert count(store) == 2
    answer = await client.post(URL, content=protobuf(request(good, span("also good"))), headers=PROTOBUF)
    assert ExportTraceServiceResponse.FromString(answer.content).partial_success.rejected_spans == 0


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("body", "headers", "status", "words"),
    [
        (b"{}", {"content-type": "text/plain"}, 415, "application/x-protobuf or application/json"),
        (b"{}", {**JSON, "content-encoding": "br"}, 415, "Content-Encoding br"),
        (protobuf(CORPUS[0])[:-9], PROTOBUF, 400, "not an OTLP ExportTraceServiceRequest in protobuf"),
        (b"[1, 2]", JSON, 400, "is a JSON object, not an array"),
        (b"{not json", JSON, 400, "not JSON"),
        (b"plain bytes", {**PROTOBUF, "content-encoding": "gzip"}, 400, "not gzip"),
        (gzip.compress(b"x" * 100)[:-12], {**PROTOBUF, "content-encoding": "gzip"}, 400, "cut short"),
        (gzip.compress(b"\0" * (2 << 20)), {**PROTOBUF, "content-encoding": "gzip"}, 413, "inflates to over"),
        (b"x" * ((1 << 20) + 1), PROTOBUF, 413, "over the limit"),
        (orjson.dumps(request(*[span(f"s{i}") for i in range(51)])), JSON, 413, "holds over 50 spans"),
        (orjson.dumps(request(span("x", trace="0" * 32))), JSON, 400, "none of the 1 spans can be read"),
    ],
    ids=[
        "type",
        "encoding",
        "truncated",
        "array",
        "not-json",
        "bad-gzip",
        "cut-gzip",
        "gzip-bomb",
        "too-big",
        "too-many",
        "all-bad",
    ],
)
async def test_a_bad_request_gets_the_otlp_error_answer_and_stores_nothing(
    client: httpx2.AsyncClient, store: Store, body: bytes, headers: dict[str, str], status: int, words: str
) -> None:
    answer = await client.post(URL, content=body, headers=headers)
    assert answer.status_code == status
    if headers.get("content-type") == "application/x-protobuf":
        message = Status.FromString(answer.content).message
    else:
        message = answer.json()["message"]
    assert words in message
    assert count(store) == 0


@pytest.mark.anyio
async def test_an_export_whose_worker_died_is_a_retryable_otlp_error_and_the_next_is_stored(store: Store) -> None:
    app = create_app(store, Settings(otlp_workers=1, otlp_small_body=0))
    reader = AppState.of(app).live.otlp_reader
    await reader.start()
    try:
        (worker,) = multiprocessing.active_children()
        os.kill(worker.pid or 0, signal.SIGKILL)
        worker.join(timeout=10)
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://devtool") as client:
            refused = await client.post(URL, content=protobuf(CORPUS[1]), headers=PROTOBUF)
            assert refused.status_code == 503  # OTLP/HTTP: the exporter sends it again
            assert Status.FromString(refused.content).code == 14  # UNAVAILABLE
            assert count(store) == 0
            again = await client.post(URL, content=protobuf(CORPUS[1]), headers=PROTOBUF)
            assert again.status_code == 200
        assert count(store) == 8
    finally:
        reader.close()


@pytest.mark.anyio
async def test_an_otel_run_says_where_rewind_would_be_that_it_cannot(client: httpx2.AsyncClient, store: Store) -> None:
    await client.post(URL, content=orjson.dumps(genai_run()), headers=JSON)
    trace_id = "1" * 32
    assert (await client.get("/")).status_code == 200
    tool_span = next(e for e in run_events(store, trace_id) if e["type"] == "tools:execute:start")["trace"]["spanId"]
    page = HTMLParser((await client.get(f"/runs/{trace_id}?span={tool_span}")).text)
    assert page.css_first("#otel-badge") is not None
    notice = page.css_first("#no-journal")
    assert notice is not None
    assert "rewind and replay are unavailable" in notice.text()
    assert page.css_first("#rewind-before") is None
    # The detail shows the tool call as the client named it, with its arguments and result.
    detail = page.css_first("article.detail").text()
    assert "get_weather" in detail
    assert "Paris" in detail
    assert "sunny" in detail
    actions = HTMLParser((await client.get(f"/runs/{trace_id}/actions")).text)
    otlp = await client.get(actions.css_first("#export-otlp").attributes["href"] or "")
    assert otlp.status_code == 200
    assert (
        orjson.loads(otlp.content.splitlines()[0])["resourceSpans"][0]["scopeSpans"][0]["scope"]["name"]
        == "pydantic-ai"
    )
    perfetto = await client.get(actions.css_first("#export-perfetto").attributes["href"] or "")
    assert len([e for e in perfetto.json()["traceEvents"] if e["ph"] == "X"]) == 4
    with pytest.raises(RewindError, match="came from OpenTelemetry: it has no journal"):
        rewind(store, trace_id, tool_span, "before")


@pytest.mark.anyio
async def test_a_run_runs_until_its_root_span_arrives(client: httpx2.AsyncClient, store: Store) -> None:
    spans = genai_run()["resourceSpans"][0]["scopeSpans"][0]["spans"]
    children, root = spans[:-1], spans[-1]  # an exporter sends a span when it ends: the root last
    await client.post(URL, content=orjson.dumps(request(*children)), headers=JSON)
    assert (await client.get("/")).status_code == 200
    assert get_run(store, "1" * 32).status == "running"
    await client.post(URL, content=orjson.dumps(request(root)), headers=JSON)
    assert (await client.get("/")).status_code == 200
    run = get_run(store, "1" * 32)
    assert (run.status, run.name) == ("completed", "weather_agent")
    depths = dict(store.query("SELECT name, max(depth) FROM spans GROUP BY name"))
    assert depths == {"weather_agent": 0, "chat gpt-4.1-mini": 1, "get_weather": 1}


@pytest.mark.anyio
async def test_log_records_sent_before_their_span_give_the_turn_its_messages(
    client: httpx2.AsyncClient, store: Store
) -> None:
    sid = "b" * 16
    messages = chat_messages_as_logs(sid)
    answer = await client.post(LOGS, content=protobuf_logs(messages), headers=PROTOBUF)
    assert answer.status_code == 200
    assert not ExportLogsServiceResponse.FromString(answer.content).HasField("partial_success")
    chat = span("chat gpt-4o-mini", {"gen_ai.operation.name": "chat", "gen_ai.system": "openai"}, sid=sid)
    assert (await client.post(URL, content=orjson.dumps(request(chat)), headers=JSON)).status_code == 200
    assert (await client.get("/")).status_code == 200  # a page derives what the appender left pending
    start, end = run_events(store, "0af7651916cd43dd8448eb211c80319c")
    assert [m["role"] for m in start["messages"]] == ["system", "user"]
    assert end["message"]["tool_calls"][0]["name"] == "add"
    # Sent again after the span is stored, they have nowhere to go: refused, and said why.
    answer = await client.post(LOGS, content=orjson.dumps(messages), headers=JSON)
    refusal = answer.json()["partialSuccess"]
    assert refusal["rejectedLogRecords"] == 3
    assert "3 of 3 log records refused" in refusal["errorMessage"]
    assert "its span is stored already" in refusal["errorMessage"]
    assert run_events(store, "0af7651916cd43dd8448eb211c80319c") == [start, end]


@pytest.mark.anyio
async def test_held_log_records_are_let_go_once_their_span_is_stored(store: Store) -> None:
    app = create_app(store, Settings(otlp_workers=1, otlp_small_body=0))
    held = AppState.of(app).live.span_logs
    try:
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://devtool") as client:
            await client.post(LOGS, content=orjson.dumps(chat_messages_as_logs("b" * 16)), headers=JSON)
            assert len(held) == 3
            chat = span("chat gpt-4o-mini", {"gen_ai.operation.name": "chat"}, sid="b" * 16)
            assert (await client.post(URL, content=orjson.dumps(request(chat)), headers=JSON)).status_code == 200
        assert len(held) == 0
    finally:
        AppState.of(app).live.otlp_reader.close()


@pytest.mark.anyio
async def test_a_log_record_outside_a_span_is_refused_and_a_bad_logs_body_is_an_otlp_error(
    client: httpx2.AsyncClient,
) -> None:
    outside = logs_request(log_record("app.log", "started"))
    answer = await client.post(LOGS, content=orjson.dumps(outside), headers=JSON)
    assert answer.json()["partialSuccess"]["rejectedLogRecords"] == 1
    assert "not written inside a span" in answer.json()["partialSuccess"]["errorMessage"]
    answer = await client.post(LOGS, content=b"\x0a\xff", headers=PROTOBUF)
    assert answer.status_code == 400
    assert "not an OTLP ExportLogsServiceRequest" in Status.FromString(answer.content).message
    answer = await client.post(LOGS, content=b"{}", headers={"content-type": "text/plain"})
    assert (answer.status_code, answer.json()["code"]) == (415, 3)


@pytest.mark.anyio
async def test_an_otel_run_is_found_by_its_words_and_costs_what_its_chats_cost(
    client: httpx2.AsyncClient, store: Store
) -> None:
    await client.post(URL, content=orjson.dumps(genai_run()), headers=JSON)
    await client.post(URL, content=orjson.dumps(CORPUS[1]), headers=JSON)
    found = HTMLParser((await client.get("/", params={"q": "Weather in Paris"})).text)
    (row,) = found.css("tr.run-row")  # the words of its question, in the span's messages
    assert "weather_agent" in row.text()
    missed = HTMLParser((await client.get("/", params={"q": "no such words anywhere"})).text)
    assert missed.css("tr.run-row") == []
    run = get_run(store, "1" * 32)
    assert run.cost_micro_usd is not None
    assert run.cost_micro_usd > 0


def nested_arrays(depth: int) -> dict[str, Any]:
    """An attribute value that is `depth` arrays, one inside the other."""
    found: dict[str, Any] = {"stringValue": "bottom"}
    for _ in range(depth):
        found = {"arrayValue": {"values": [found]}}
    return found


def bad_span(how: str, sid: str) -> dict[str, Any]:
    """A span whose ids and shape are fine but which the store's gate refuses (issue 42)."""
    found = span("bad", sid=sid)
    if how == "start-1ns":
        found["startTimeUnixNano"] = "1"
    elif how == "end-max":
        found["endTimeUnixNano"] = str((1 << 64) - 1)
    else:
        found["attributes"].append({"key": "deep", "value": nested_arrays(40)})
    return found


@pytest.mark.anyio
@pytest.mark.parametrize("how", ["start-1ns", "end-max", "33-arrays"])
@pytest.mark.parametrize("encoding", ["json", "protobuf"])
@pytest.mark.parametrize("holding", [False, True], ids=["", "a-log-record-held"])
async def test_one_bad_span_is_refused_on_its_own_and_the_rest_are_stored(
    client: httpx2.AsyncClient, store: Store, how: str, encoding: str, holding: bool
) -> None:
    if holding:  # a request read while a record is held is read in the server's threads
        held = logs_request(log_record("app.log", "waiting", sid="c" * 16))
        assert (await client.post(LOGS, content=orjson.dumps(held), headers=JSON)).status_code == 200
    good = [span(f"good {i}") for i in range(20)]
    document = request(*good[:10], bad_span(how, "badbadbadbadbad1"), *good[10:])
    if encoding == "json":
        answer = await client.post(URL, content=orjson.dumps(document), headers=JSON)
        assert answer.status_code == 200
        partial = answer.json()["partialSuccess"]
        rejected, message = partial["rejectedSpans"], partial["errorMessage"]
    else:
        answer = await client.post(URL, content=protobuf(document), headers=PROTOBUF)
        assert answer.status_code == 200
        found = ExportTraceServiceResponse.FromString(answer.content).partial_success
        rejected, message = found.rejected_spans, found.error_message
    assert rejected == 1
    assert message.startswith("1 of 21 spans refused: span badbadbadbadbad1 of trace ")
    assert count(store) == 40
    # The reader lives on: the next request (its worker's, too) is read and stored.
    again = await client.post(URL, content=orjson.dumps(request(span("after"))), headers=JSON)
    assert (again.status_code, again.json()) == (200, {})
    assert count(store) == 42


@pytest.mark.anyio
async def test_a_request_of_only_spans_the_gate_refuses_is_a_400_naming_the_first(client: httpx2.AsyncClient) -> None:
    document = request(bad_span("start-1ns", "badbadbadbadbad1"), bad_span("end-max", "badbadbadbadbad2"))
    answer = await client.post(URL, content=orjson.dumps(document), headers=JSON)
    assert answer.status_code == 400
    assert "none of the 2 spans can be stored (span badbadbadbadbad1 of trace" in answer.json()["message"]


@pytest.mark.anyio
async def test_held_log_records_are_capped_in_bytes_and_those_refused_are_counted_in_the_answer(store: Store) -> None:
    app = create_app(store, Settings(max_ingest_bytes=40 << 20))
    held = AppState.of(app).live.span_logs
    big = "x" * (1 << 20)
    taken = 0
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://devtool") as client:
        for round_ in range(3):  # 90 records of 1 MiB, for spans that have not come (and never do)
            records = [log_record("app.log", big, sid=f"{round_ + 1:x}{i + 1:015x}") for i in range(30)]
            answer = await client.post(LOGS, content=orjson.dumps(logs_request(*records)), headers=JSON)
            assert answer.status_code == 200
            partial = answer.json().get("partialSuccess", {"rejectedLogRecords": 0})
            taken += 30 - partial["rejectedLogRecords"]
            if partial["rejectedLogRecords"]:
                assert "for spans not sent yet, its limit (20,000 records, 64 MiB)" in partial["errorMessage"]
        assert taken == len(held) == 63  # 64 MiB of them, each 1 MiB and a little
        assert held.bytes <= held.max_bytes
        # Every record taken is kept: its span, when it comes, has it.
        sid = "1" + f"{1:015x}"
        chat = span("chat", {"gen_ai.operation.name": "chat"}, sid=sid)
        assert (await client.post(URL, content=orjson.dumps(request(chat)), headers=JSON)).status_code == 200
        assert len(held) == 62
        # Room again: the next record is held.
        one = orjson.dumps(logs_request(log_record("a", "b", sid="f" * 16)))
        answer = await client.post(LOGS, content=one, headers=JSON)
        assert (answer.status_code, answer.content, len(held)) == (200, b"{}", 63)
        assert (await client.get("/")).status_code == 200  # a page derives what the appender left pending
    start, _ = run_events(store, "0af7651916cd43dd8448eb211c80319c")
    assert start["otel"]["events"][0]["attributes"]["body"] == big


def many_spans_protobuf(count: int) -> bytes:
    """An `ExportTraceServiceRequest` of `count` spans of ids and times only (48 bytes each), written by
    hand: the request of issue 42, 92 KiB gzipped for 625,000 spans."""
    fixed = (T0).to_bytes(8, "little")
    one = b"\x0a\x10" + b"\x11" * 16 + b"\x12\x08" + b"\x22" * 8 + b"\x39" + fixed + b"\x41" + fixed
    spans = (b"\x12" + bytes([len(one)]) + one) * count
    scope = b"\x12" + varint(len(spans)) + spans
    return b"\x0a" + varint(len(scope)) + scope


def varint(number: int) -> bytes:
    out = bytearray()
    while number >= 0x80:
        out.append(number & 0x7F | 0x80)
        number >>= 7
    return bytes(out + bytes([number]))


@pytest.mark.anyio
async def test_a_request_of_625000_spans_is_refused_before_they_are_decoded(store: Store) -> None:
    app = create_app(store, Settings())  # the server's limits: 32 MiB inflated, 10,000 events
    sent = many_spans_protobuf(625_000)
    assert ExportTraceServiceRequest.FromString(many_spans_protobuf(3)).resource_spans[0].scope_spans[0].spans[2]
    bodies = [
        (gzip.compress(sent, 9), {**PROTOBUF, "content-encoding": "gzip"}),
        (
            gzip.compress(b'{"resourceSpans": [{"scopeSpans": [{"spans": [' + b",".join([b"{}"] * 625_000) + b"]}]}]}"),
            {
                **JSON,
                "content-encoding": "gzip",
            },
        ),
    ]
    assert len(bodies[0][0]) < 100 << 10
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://devtool") as client:
        for body, headers in bodies:
            tracemalloc.start()
            try:
                answer = await client.post(URL, content=body, headers=headers)
                _, peak = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
            assert answer.status_code == 413
            assert "holds over 5,000 spans (two events each; the limit is 10,000)" in answer.text
            # What decoding them all would have made (a span object each) was never made: the body, its
            # inflated bytes (30 MB) and the parsed JSON's empty objects are all that was held.
            assert peak < 120 << 20
    assert count(store) == 0


@pytest.mark.anyio
async def test_a_logs_request_of_more_records_than_events_taken_is_a_413(client: httpx2.AsyncClient) -> None:
    records = [log_record("app.log", "x", sid="d" * 16) for _ in range(101)]
    answer = await client.post(LOGS, content=orjson.dumps(logs_request(*records)), headers=JSON)
    assert answer.status_code == 413
    assert "holds over 100 log records (an event each; the limit is 100)" in answer.json()["message"]
    answer = await client.post(LOGS, content=protobuf_logs(logs_request(*records)), headers=PROTOBUF)
    assert answer.status_code == 413


@pytest.mark.anyio
async def test_a_json_body_of_millions_of_objects_is_refused_before_it_is_parsed(store: Store) -> None:
    app = create_app(store, Settings())
    body = b'{"resourceSpans": [{"scopeSpans": [{"spans": [' + b"{}," * 5_000_000 + b"{}]}]}]}"
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://devtool") as client:
        tracemalloc.start()
        try:
            answer = await client.post(URL, content=gzip.compress(body), headers={**JSON, "content-encoding": "gzip"})
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert answer.status_code == 413
    assert "the JSON body holds over 1,000,000 objects" in answer.json()["message"]
    assert peak < 80 << 20  # the body and its inflated bytes; parsed, the objects alone were ~400 MB
