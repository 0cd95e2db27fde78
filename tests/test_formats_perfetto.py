"""Runs as Chrome trace-event JSON: valid by the format's schema, one slice per span, nested per lane."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import fastjsonschema
import orjson
import pytest

import devtool
from devtool.core import MemorySink, ScriptedModel, create_agent, create_tool, prompt, run_with
from devtool.formats.pairing import paired_spans
from devtool.formats.perfetto import perfetto_trace
from devtool.store import Store, load_file
from devtool.store.export import export_run_perfetto
from testkit.fake_provider import FakeProvider
from tests.conftest import CORPUS, Trace
from tests.instrument_agents import PROGRAMS, WRITER, Program, script

SCHEMA = Path(__file__).parent / "schemas" / "chrome_trace_event.schema.json"
validate = fastjsonschema.compile(orjson.loads(SCHEMA.read_bytes()))


def trace_of(events: list[dict[str, Any]]) -> dict[str, Any]:
    document = orjson.loads(b"".join(perfetto_trace(events, name="r")))
    validate(document)
    return document


def parallel_run() -> list[dict[str, Any]]:
    """Three sub-agents at once under a lead, each with a tool call: slices that overlap in time."""
    lookup = create_tool("lookup", lambda key: key.upper())

    async def worker(props: dict[str, Any]) -> Any:
        await asyncio.sleep(0.01)
        return await prompt(props["key"], tools=[lookup])

    model = ScriptedModel(
        lambda messages: (
            "ok"
            if messages[-1]["role"] == "tool"
            else {"tool_calls": [{"name": "lookup", "arguments": {"key": messages[-1]["content"]}}]}
        )
    )
    sub = create_agent("worker", worker, model=model)
    lead = create_agent("lead", lambda props: asyncio.gather(*[sub({"key": k}) for k in "abc"]))
    sink = MemorySink()
    asyncio.run(run_with(lambda: lead({}), sinks=[sink]))
    return sorted(sink.events, key=lambda e: e["timestamp"])  # type: ignore[return-value]


def assert_nested(slices: list[dict[str, Any]]) -> dict[int, list[dict[str, Any]]]:
    """Every slice of a lane inside the one under it (never across its end, to the nanosecond); the lanes."""
    lanes: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for item in slices:
        lanes[item["tid"]].append(item)
    for lane in lanes.values():
        lane.sort(key=lambda s: (s["ts"], -s["dur"]))
        stack: list[dict[str, Any]] = []
        for item in lane:
            while stack and stack[-1]["ts"] + stack[-1]["dur"] <= item["ts"]:
                stack.pop()
            if stack:
                under = stack[-1]
                assert item["ts"] + item["dur"] <= under["ts"] + under["dur"] + 1e-6, (item, under)
            stack.append(item)
    return lanes


def test_one_slice_per_span_and_slices_nest_on_each_lane() -> None:
    events = parallel_run()
    spans = [span for span in paired_spans(events) if not span.instant]
    document = trace_of(events)
    slices = [e for e in document["traceEvents"] if e["ph"] == "X"]
    assert len(slices) == len(spans) > 20
    assert {s["args"]["spanId"] for s in slices} == {span.trace["spanId"] for span in spans}
    assert {s["name"] for s in slices if s["cat"] == "agent"} == {"lead", "worker"}
    assert len(assert_nested(slices)) >= 3  # the three workers overlap: they cannot share a lane
    threads = {e["tid"]: e["args"]["name"] for e in document["traceEvents"] if e["name"] == "thread_name"}
    assert threads[1] == "runWith"  # a lane is named by the span that opened it: the root, then each worker
    assert list(threads.values()).count("worker") >= 2


def test_instants_failures_and_running_spans() -> None:
    trace = Trace()
    root = trace.start("agent", agentId="a")
    trace.point("sys:log", root, message="hello")
    trace.span("turn", root, success=False, error={"name": "E", "message": "bad"})
    document = trace_of(trace.events)
    by_name = {e["name"]: e for e in document["traceEvents"] if e["ph"] in "Xi"}
    assert by_name["hello"]["ph"] == "i"
    assert by_name["turn 0"]["args"]["status"] == "failed"
    assert by_name["a"]["args"]["status"] == "running"
    assert by_name["a"]["ts"] + by_name["a"]["dur"] == by_name["turn 0"]["ts"] + by_name["turn 0"]["dur"]


def test_a_stored_run_exports_as_a_valid_trace(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.duckdb")
    trace_id = load_file(store, CORPUS / "rejelly" / "failure.trace.jsonl").traces[0]
    document = orjson.loads(b"".join(export_run_perfetto(store, trace_id)))
    validate(document)
    spans = store.query("SELECT count(*) FROM spans WHERE trace_id = ? AND NOT instant", [trace_id])[0][0]
    assert len([e for e in document["traceEvents"] if e["ph"] == "X"]) == spans
    store.close()


def test_the_schema_refuses_what_perfetto_cannot_read() -> None:
    bad = {"traceEvents": [{"ph": "X", "pid": 1, "tid": 1, "name": "no duration", "ts": 1}]}
    try:
        validate(bad)
    except fastjsonschema.JsonSchemaValueException:
        return
    raise AssertionError("a complete event without dur passed the schema")


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_every_slice_of_a_recorded_sdk_run_nests(program: Program, fake_provider: FakeProvider) -> None:
    devtool.instrument.install()
    script(fake_provider, handoff=program.handoff)
    sink = MemorySink()
    with devtool.record(program.name, to=[sink]):
        asyncio.run(program.run(fake_provider, WRITER))
    events = sorted(sink.events, key=lambda e: e["timestamp"])
    document = trace_of(events)  # type: ignore[arg-type]
    slices = [e for e in document["traceEvents"] if e["ph"] == "X"]
    assert {s["cat"] for s in slices} >= {"model:call", "turn"}
    assert len(slices) == len([span for span in paired_spans(events) if not span.instant])  # type: ignore[arg-type]
    assert_nested(slices)
    assert document["otherData"]["startTime"].startswith(
        datetime.fromtimestamp(events[0]["timestamp"] / 1000, UTC).strftime("%Y-%m-%dT%H:%M")
    )


def test_a_turn_stamped_before_its_model_call_ends_still_holds_it() -> None:
    trace = Trace()
    root = trace.start("agent", agentId="a")
    turn = trace.start("turn", root)
    call = trace.start("model:call", turn)
    trace.end(turn)
    trace.end(call, at=trace.events[-1]["timestamp"] + 0.00025)  # stamped 0.25 µs after its turn's end
    trace.end(root)
    slices = {e["cat"]: e for e in trace_of(trace.events)["traceEvents"] if e["ph"] == "X"}
    assert slices["turn"]["ts"] + slices["turn"]["dur"] >= slices["model:call"]["ts"] + slices["model:call"]["dur"]
    assert_nested(list(slices.values()))
