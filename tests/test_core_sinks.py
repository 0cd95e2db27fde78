"""Sinks: a list, a JSONL file, any callable; one that raises is reported once and never breaks a run."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from devtool.core import JsonlSink, MemorySink, create_agent, create_tool, run_with
from devtool.core.events import Emitter, TraceEvent


async def busy_run() -> list[int]:
    tool = create_tool("t", lambda i: i)

    async def handler(props: Any) -> list[int]:
        return [await tool(i=i) for i in range(3)]

    return await create_agent("a", handler)(None)


def test_jsonl_sink_writes_one_event_per_line_as_they_happen(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    memory_sink = MemorySink()
    lines_seen_mid_run: list[int] = []

    def peek(event: TraceEvent) -> None:
        if event["type"] == "tools:execute:end":
            lines_seen_mid_run.append(len(path.read_text().splitlines()))

    with JsonlSink(path) as jsonl:
        asyncio.run(run_with(busy_run, sinks=[jsonl, memory_sink, peek]))
    events = [json.loads(line) for line in path.read_text().splitlines()]
    assert events == memory_sink.events
    # runWith, agent, generation starts, then a start and an end per tool call: on disk as they happen.
    assert lines_seen_mid_run == [5, 7, 9]


def test_jsonl_sink_appends_across_runs(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    for _ in range(2):
        with JsonlSink(path) as sink:
            asyncio.run(run_with(lambda: 1, sinks=[sink]))
    assert len({json.loads(line)["trace"]["traceId"] for line in path.read_text().splitlines()}) == 2


def test_a_raising_sink_is_reported_once_and_the_run_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    calls: list[str] = []

    def broken(event: TraceEvent) -> None:
        calls.append(event["type"])
        raise OSError("disk full")

    after = MemorySink()
    with caplog.at_level(logging.WARNING, logger="devtool.core"):
        assert asyncio.run(run_with(busy_run, sinks=[broken, after])) == [0, 1, 2]
    assert len(calls) == len(after.events) > 10  # still called, and later sinks got every event
    reports = [r for r in caplog.records if "disk full" in r.getMessage()]
    assert len(reports) == 1
    assert "the run goes on" in reports[0].getMessage()


class Batches:
    """A sink that keeps the types of what it is handed at once: one event, or events emitted together."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    def __call__(self, event: TraceEvent) -> None:
        self.batches.append([event["type"]])

    def many(self, events: list[TraceEvent]) -> None:
        self.batches.append([event["type"] for event in events])


def test_a_frames_opening_and_closing_events_reach_a_sink_at_once(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    batches, memory_sink = Batches(), MemorySink()
    with JsonlSink(path) as jsonl:
        asyncio.run(run_with(busy_run, sinks=[batches, jsonl, memory_sink]))
    tool_calls = [["tools:execute:start"], ["tools:execute:end"]] * 3
    opened, closed = ["agent:start", "generation:start"], ["generation:end", "agent:end"]
    assert batches.batches == [["runWith:start"], opened, *tool_calls, closed, ["runWith:end"]]
    # The JSONL file got each batch in one write, whole lines in the order the events happened.
    assert [json.loads(line) for line in path.read_text().splitlines()] == memory_sink.events


def test_deferred_events_reach_a_sink_with_the_event_that_settles_them() -> None:
    batches = Batches()
    emitter = Emitter([batches])
    at = {"agentId": "", "trace": {"traceId": "t", "spanId": "s", "parentSpanId": ""}}
    emitter.defer(lambda: emitter.send({"type": "turn:start", **at}))  # type: ignore[typeddict-item]
    emitter.defer(lambda: emitter.send({"type": "turn:end", **at}))  # type: ignore[typeddict-item]
    emitter.emit({"type": "tools:execute:start", **at})  # type: ignore[typeddict-item]
    # With the event that settled them; or, had the drainer come first (50 ms on), on their own at once.
    together, alone = ["turn:start", "turn:end", "tools:execute:start"], ["turn:start", "turn:end"]
    assert batches.batches in ([together], [alone, ["tools:execute:start"]])
    emitter.emit({"type": "tools:execute:end", **at})  # type: ignore[typeddict-item]
    assert batches.batches[-1] == ["tools:execute:end"]


def test_a_batch_with_an_event_that_is_not_json_still_writes_the_others(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    at = {"agentId": "", "trace": {"traceId": "t", "spanId": "s", "parentSpanId": ""}}
    events: list[Any] = [{"type": "a", **at}, {"type": "b", "usage": 2**70, **at}, {"type": "c", **at}]
    with JsonlSink(path) as sink, pytest.raises(TypeError):  # orjson's error: an integer beyond 64 bits
        sink.many(events)
    assert [json.loads(line)["type"] for line in path.read_text().splitlines()] == ["a", "c"]
