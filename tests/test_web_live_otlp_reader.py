"""The OTLP reader's worker process: what it hands back, what it refuses, a worker that dies, and one
that cannot start."""

from __future__ import annotations

import multiprocessing
import os
import pickle
import signal
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from multiprocessing.process import BaseProcess
from pathlib import Path

import orjson
import pytest

from devtool.formats.otlp_logs import SpanLogs, decode_json_logs
from devtool.store.errors import InvalidEventsError, LineProblem
from devtool.web.bodies import BodyError
from devtool.web.live import LiveEvent
from devtool.web.live.otlp_reader import OtlpReader
from devtool.web.otlp_read import Body, ReadFailed, read_spans
from testkit.checkout import child_env
from tests.otlp_factory import CORPUS, request, span
from tests.test_formats_otlp_logs import chat_messages_as_logs
from tests.test_formats_otlp_proto import protobuf

LIMIT = 1 << 20


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def reader() -> AsyncIterator[OtlpReader]:
    found = OtlpReader(1, SpanLogs(), small=0)  # every body to the worker, small as these are
    await found.start()
    try:
        yield found
    finally:
        found.close()


def body(data: bytes, *, protobuf: bool = True, max_events: int = 1_000) -> Body:
    return Body(data, "identity", protobuf, LIMIT, max_events)


def workers() -> list[BaseProcess]:
    """This process's running children: the readers' workers (the tests start no others)."""
    return multiprocessing.active_children()


@pytest.mark.anyio
async def test_a_worker_hands_back_each_events_text_and_what_the_store_and_streams_read_of_it(
    reader: OtlpReader,
) -> None:
    assert len(workers()) == 1  # started before the first request, not by it
    sent = body(protobuf(CORPUS[1]))
    here = read_spans(sent, SpanLogs())
    there = await reader.read_spans(sent)
    assert [e.text for e in there.events] == [e.text for e in here.events]
    assert [e.written for e in there.events] == [e.written for e in here.events]
    assert [LiveEvent.of(1, e.event) for e in there.events] == [LiveEvent.of(1, e.event) for e in here.events]
    # Only the rule fields came back as values: the event itself is its text.
    assert {key for e in there.events for key in e.event} == {"type", "timestamp", "trace"}
    assert [orjson.loads(e.text) for e in there.events] == [e.event for e in here.events]
    assert (there.total, there.rejected) == (here.total, here.rejected) == (4, [])


@pytest.mark.anyio
async def test_a_worker_imports_what_reading_takes_not_the_web_app(reader: OtlpReader) -> None:
    """A spawned worker imports the module of each function it is sent, with its packages' `__init__`s:
    from `live/otlp_reader.py` that was the whole web app, most of a fresh server's start before it said
    where it was (BENCHMARKS.md)."""
    listed = reader._running().pool.submit(eval, "sorted(__import__('sys').modules)")
    modules = set(listed.result(timeout=60))
    assert {"devtool.web.otlp_read", "devtool.formats", "devtool.store.event_gate"} <= modules
    assert not {"devtool.web.app", "devtool.web.live", "devtool.web.routes", "jinja2", "uvicorn"} & modules


@pytest.mark.anyio
async def test_a_worker_refuses_what_the_server_refuses_in_the_same_words(reader: OtlpReader) -> None:
    good, bad = span("good"), span("bad", trace="0" * 32)
    partial = await reader.read_spans(body(orjson.dumps(request(good, bad)), protobuf=False))
    assert (partial.total, len(partial.events)) == (2, 2)
    assert "trace" in str(partial.rejected[0])
    six = orjson.dumps(request(*[span(f"s{i}") for i in range(6)]))
    for sent, status, words in [
        (body(protobuf(CORPUS[1])[:-3]), 400, "protobuf"),
        (body(six, protobuf=False, max_events=10), 413, "holds over 5 spans (two events each; the limit is 10)"),
        (body(orjson.dumps(request(bad)), protobuf=False), 400, "none of the 1 spans can be read"),
    ]:
        with pytest.raises(BodyError) as there:
            await reader.read_spans(sent)
        with pytest.raises(BodyError) as here:
            read_spans(sent, SpanLogs())
        assert (there.value.status, str(there.value)) == (here.value.status, str(here.value))
        assert there.value.status == status
        assert words in str(there.value)


@pytest.mark.anyio
async def test_a_worker_that_dies_costs_one_request_a_503_and_the_next_is_read_by_a_new_one(
    reader: OtlpReader,
) -> None:
    (worker,) = workers()
    os.kill(worker.pid or 0, signal.SIGKILL)
    worker.join(timeout=10)
    sent = body(protobuf(CORPUS[1]))
    with pytest.raises(BodyError) as refused:
        await reader.read_spans(sent)
    assert refused.value.status == 503
    assert "send it again" in str(refused.value)
    again = await reader.read_spans(sent)
    assert len(again.events) == 8
    (replacement,) = workers()
    assert replacement.pid != worker.pid


@pytest.mark.anyio
async def test_a_small_body_is_read_in_the_servers_threads_not_queued_for_a_worker() -> None:
    reader = OtlpReader(1, SpanLogs(), small=len(protobuf(CORPUS[1])))
    try:
        read = await reader.read_spans(body(protobuf(CORPUS[1])))
        assert [e.text for e in read.events] == [
            e.text for e in read_spans(body(protobuf(CORPUS[1])), SpanLogs()).events
        ]
        assert workers() == []  # no worker was started for it
        big = orjson.dumps(request(*[span(f"s{i}") for i in range(40)]))
        assert len(big) > reader.small
        assert len((await reader.read_spans(body(big, protobuf=False))).events) == 80
        assert len(workers()) == 1  # a bigger one went to a worker
    finally:
        reader.close()


@pytest.mark.anyio
async def test_spans_with_log_records_held_for_them_are_read_where_the_records_are() -> None:
    logs = SpanLogs()
    reader = OtlpReader(1, logs)
    try:
        chat = span("chat gpt-4o-mini", {"gen_ai.operation.name": "chat"}, sid="b" * 16)
        logs.hold(decode_json_logs(chat_messages_as_logs("b" * 16)).records)
        read = await reader.read_spans(body(orjson.dumps(request(chat)), protobuf=False))
        start = orjson.loads(read.events[0].text)
        assert [m["role"] for m in start["messages"]] == ["system", "user"]
        assert workers() == []  # no worker was started for it
        assert len(logs) == 3  # held until the span is stored: a retry of it gets them again
        logs.release(read.spans())
        assert len(logs) == 0
    finally:
        reader.close()


def test_a_worker_that_cannot_start_says_why_and_what_to_do(tmp_path: Path) -> None:
    # The mistake a script makes: workers asked for at the top of the module, with no `__main__` guard,
    # so each spawned worker, importing the script again, tries to start workers of its own and dies.
    script = tmp_path / "serve_here.py"
    script.write_text(
        textwrap.dedent(
            """
            import asyncio
            from devtool.formats.otlp_logs import SpanLogs
            from devtool.web.live.otlp_reader import OtlpReader

            asyncio.run(OtlpReader(1, SpanLogs()).start())
            """
        )
    )
    ran = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, cwd=tmp_path, env=child_env()
    )
    assert ran.returncode == 1
    last = ran.stderr.strip().splitlines()[-1]
    assert last.startswith("devtool.web.otlp_workers.WorkerStartError: the process that reads OTLP exports")
    assert 'if __name__ == "__main__":' in last
    assert "--otlp-workers 0" in last


@pytest.mark.parametrize(
    "error",
    [
        InvalidEventsError((LineProblem("no type", element=3),), 1),
        BodyError(413, "too big"),
        ReadFailed("KeyError: 'x'"),
    ],
)
def test_what_a_worker_raises_comes_back_to_the_server_as_it_was(error: Exception) -> None:
    # An exception that does not unpickle in the server breaks the worker pool: every request in
    # flight then gets a 503 (issue 42).
    again = pickle.loads(pickle.dumps(error))
    assert (type(again), str(again)) == (type(error), str(error))
