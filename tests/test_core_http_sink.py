"""`HttpSink` against a real HTTP server on loopback: batches in order, spooling when it is down."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from devtool.core import MemorySink, create_agent, create_tool, run_with
from devtool.core.http_sink import HttpSink


class Collector(ThreadingHTTPServer):
    """A stand-in DevTool ingest endpoint that records every batch (and can answer an error)."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.batches: list[list[dict[str, Any]]] = []
        self.status = 200
        self.max_batch: int | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/api/v1/traces"


class _Handler(BaseHTTPRequestHandler):
    server: Collector

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.server.max_batch is not None and len(body) > self.server.max_batch:
            self.send_response(413)
        elif self.server.status != 200:
            self.send_response(self.server.status)
        else:
            self.server.batches.append(body)
            self.send_response(202)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[Collector]:
    server = Collector()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


async def fifty_tool_calls() -> None:
    tool = create_tool("t", lambda i: i)

    async def handler(props: Any) -> None:
        for i in range(50):
            await tool(i=i)

    await create_agent("a", handler)(None)


def test_events_arrive_in_order_in_bounded_batches_by_the_end_of_the_run(collector: Collector, tmp_path: Path) -> None:
    sink = HttpSink(collector.url, batch_size=16, spool=tmp_path / "spool.jsonl")
    everything = MemorySink()
    asyncio.run(run_with(fifty_tool_calls, sinks=[sink, everything]))
    # run_with flushed the sink: all events are there when it returns.
    received = [event for batch in collector.batches for event in batch]
    assert received == everything.events
    assert max(len(batch) for batch in collector.batches) <= 16
    assert sink.sent == len(everything.events)
    assert not (tmp_path / "spool.jsonl").exists()
    sink.close()


def test_a_down_devtool_spools_everything_and_never_fails_the_run(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    spool = tmp_path / "spool.jsonl"
    sink = HttpSink("http://127.0.0.1:9/api/v1/traces", batch_size=8, retries=1, spool=spool)
    everything = MemorySink()
    with caplog.at_level(logging.WARNING, logger="devtool.core"):
        asyncio.run(run_with(fifty_tool_calls, sinks=[sink, everything]))
        sink.close()
    spooled = [json.loads(line) for line in spool.read_text().splitlines()]
    assert spooled == everything.events
    warnings = [r.getMessage() for r in caplog.records if "spooled" in r.getMessage()]
    assert len(warnings) == 1
    assert f"devtool load {spool}" in warnings[0]


def test_too_large_batches_are_split(collector: Collector, tmp_path: Path) -> None:
    collector.max_batch = 5
    sink = HttpSink(collector.url, batch_size=40, spool=tmp_path / "spool.jsonl")
    everything = MemorySink()
    asyncio.run(run_with(fifty_tool_calls, sinks=[sink, everything]))
    sink.close()
    assert [e for b in collector.batches for e in b] == everything.events
    assert max(len(b) for b in collector.batches) <= 5


def test_a_refused_batch_is_reported_not_retried_forever(
    collector: Collector, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    collector.status = 422
    sink = HttpSink(collector.url, spool=tmp_path / "spool.jsonl")
    with caplog.at_level(logging.WARNING, logger="devtool.core"):
        asyncio.run(run_with(lambda: 1, sinks=[sink]))
        sink.close()
    assert any("refused part of a batch: 422" in r.getMessage() for r in caplog.records)
    assert not (tmp_path / "spool.jsonl").exists()


def test_only_http_urls() -> None:
    with pytest.raises(ValueError, match="needs an http"):
        HttpSink("file:///etc/passwd")
