"""Runs as OTLP JSON: OTel runs given back as they came, the DevTool's own with GenAI attributes."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson

from devtool.core import MemorySink, ScriptedModel, create_agent, create_tool, prompt, run_with
from devtool.formats import decode_json_request, otlp_events
from devtool.formats.otlp_export import otlp_requests
from devtool.store import Store, load_file
from devtool.store.export import export_run_otlp
from tests.conftest import CORPUS as FILES
from tests.conftest import Trace
from tests.otlp_factory import CORPUS


def store_order(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted((orjson.loads(orjson.dumps(e)) for e in events), key=lambda e: e["timestamp"])


def spans_of(requests: list[dict[str, Any]]) -> list[Any]:
    spans = [span for request in requests for span in decode_json_request(request).spans]
    return sorted(spans, key=lambda span: span.span_id)


def test_an_otel_run_is_given_back_as_it_came() -> None:
    for document in CORPUS:
        original = decode_json_request(document).spans
        exported = list(otlp_requests(store_order(list(otlp_events(original)))))
        assert spans_of(exported) == sorted(original, key=lambda span: span.span_id)


def native_run() -> list[dict[str, Any]]:
    """A run of the DevTool's own: an agent, a turn asking for two tools at once, the tools, an answer."""
    search = create_tool("search", lambda query: {"hits": 2})
    fail = create_tool("explode", lambda: 1 / 0)
    model = ScriptedModel(
        [
            {"tool_calls": [{"name": "search", "arguments": {"query": "q"}}, {"name": "explode", "arguments": {}}]},
            "done",
        ]
    )
    agent = create_agent("researcher", lambda props: prompt("go", tools=[search, fail]), model=model)
    sink = MemorySink()
    asyncio.run(run_with(lambda: agent({}), sinks=[sink]))
    return store_order(list(sink.events))


def test_a_native_run_speaks_genai() -> None:
    spans = {span.name: span for span in spans_of(list(otlp_requests(native_run())))}
    agent = spans["invoke_agent researcher"]
    assert agent.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert agent.attributes["output.value"] == "done"  # text as it is; other values as JSON text
    first_turn = next(s for s in spans.values() if s.name == "chat scripted-model")
    assert first_turn.kind == 3
    assert first_turn.attributes["gen_ai.provider.name"] == "scripted"
    assert orjson.loads(first_turn.attributes["gen_ai.input.messages"])[0] == {
        "role": "user",
        "parts": [{"type": "text", "content": "go"}],
    }
    assert isinstance(first_turn.attributes["gen_ai.usage.input_tokens"], int)
    batch = spans["search, explode"]  # a batch of two calls: its span and one span per call under it
    calls = [s for s in spans.values() if s.parent_span_id == batch.span_id]
    assert sorted(s.name for s in calls) == ["execute_tool explode", "execute_tool search"]
    search = spans["execute_tool search"]
    assert orjson.loads(search.attributes["gen_ai.tool.call.arguments"]) == {"query": "q"}
    assert orjson.loads(search.attributes["gen_ai.tool.call.result"]) == {"hits": 2}
    explode = spans["execute_tool explode"]
    assert explode.status_code == 2
    assert explode.events[0].attributes["exception.type"] == "ZeroDivisionError"
    assert batch.start_ns <= explode.start_ns <= explode.end_ns <= batch.end_ns


def test_a_running_span_ends_with_the_run_and_says_so() -> None:
    trace = Trace()
    root = trace.start("agent", agentId="streamer")
    trace.span("turn", root)
    (request,) = otlp_requests(trace.events)
    spans = {span.name: span for span in spans_of([request])}
    assert spans["invoke_agent streamer"].attributes["devtool.running"] is True
    assert spans["invoke_agent streamer"].end_ns == spans["chat"].end_ns


def test_an_exported_run_loads_back_with_the_same_spans(tmp_path: Path) -> None:
    mine, theirs = Store(tmp_path / "mine.duckdb"), Store(tmp_path / "theirs.duckdb")
    trace_id = load_file(mine, FILES / "rejelly" / "nested.trace.jsonl").traces[0]
    path = tmp_path / "run.otlp.jsonl"
    path.write_bytes(b"".join(export_run_otlp(mine, trace_id)))
    # Each span carries the events it was made of: loaded back, they are those events, text for text.
    bodies = "SELECT body FROM events WHERE trace_id = ? ORDER BY body"
    copy = Store(tmp_path / "copy.duckdb")
    assert load_file(copy, path).kind == "otlp-json"
    assert copy.query(bodies, [trace_id]) == mine.query(bodies, [trace_id])
    copy.close()
    # Without them (a viewer that drops the DevTool's attributes), the spans are mapped as any are.
    path.write_bytes(
        b"".join(orjson.dumps(_without_carried(orjson.loads(line))) + b"\n" for line in path.read_bytes().splitlines())
    )
    assert load_file(theirs, path).kind == "otlp-json"
    columns = "span_id, parent_span_id, start_ts, end_ts, status"
    query = f"SELECT {columns} FROM spans WHERE trace_id = ? AND NOT instant"
    before, after = set(mine.query(query, [trace_id])), set(theirs.query(query, [trace_id]))
    assert len(before) > 10
    assert before <= after  # every span, with its ids, times and status
    # What else there is: the run's point events, each now a span of no length.
    instants = mine.query("SELECT span_id FROM spans WHERE trace_id = ? AND instant", [trace_id])
    assert {row[0] for row in after - before} == {row[0] for row in instants}
    # Agents and turns are agents and turns again; a batch of one tool call is that call (this run has
    # only those); anything else is a span of its own kind's name.
    kinds = dict(theirs.query("SELECT span_id, kind FROM spans WHERE trace_id = ?", [trace_id]))
    names = dict(theirs.query("SELECT span_id, name FROM spans WHERE trace_id = ?", [trace_id]))
    for span_id, kind in mine.query("SELECT span_id, kind FROM spans WHERE trace_id = ? AND NOT instant", [trace_id]):
        expected = kind if kind in ("agent", "turn", "tools:execute") else "custom:span"
        assert kinds[span_id] == expected, (span_id, kind, names[span_id])
    # And given back again, the same file: an OTel run is exported as it came.
    again = [_without_carried(orjson.loads(line)) for line in b"".join(export_run_otlp(theirs, trace_id)).splitlines()]
    assert spans_of(again) == spans_of([orjson.loads(line) for line in path.read_bytes().splitlines()])
    mine.close()
    theirs.close()


def _without_carried(request: dict[str, Any]) -> dict[str, Any]:
    """`request` with no span carrying its DevTool events (`devtool.events`)."""
    for resource in request["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                span["attributes"] = [a for a in span["attributes"] if a["key"] != "devtool.events"]
    return request
