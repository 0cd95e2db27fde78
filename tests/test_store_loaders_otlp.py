"""OTLP JSON files (the Collector's file exporter): loaded as runs, all or nothing, bad lines named."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from devtool.store import BadLines, BadLinesError, Store, load_file
from devtool.store.queries import get_run, list_runs, run_events
from devtool.store.queries.usage import span_usage
from tests.otlp_factory import CORPUS, attributes, genai_run, request, span, write_jsonl


def test_each_trace_is_a_run_with_its_spans_nested_and_named(store: Store, tmp_path: Path) -> None:
    result = load_file(store, write_jsonl(tmp_path / "traces.otlp.jsonl", CORPUS))
    assert result.kind == "otlp-json"
    assert (result.events, result.spans) == (22, 11)
    runs = {run.trace_id: run for run in list_runs(store)}
    assert {run.name for run in runs.values()} == {"weather_agent", "support", "GET /health"}
    assert runs["1" * 32].status == "completed"
    assert runs["3" * 32].status == "completed"  # a failed tool under a successful root
    spans = store.query(
        "SELECT kind, name, depth, status FROM spans WHERE trace_id = ? ORDER BY start_ts, depth", ["1" * 32]
    )
    assert spans == [
        ("agent", "weather_agent", 0, "completed"),
        ("turn", "chat gpt-4.1-mini", 1, "completed"),
        ("tools:execute", "get_weather", 1, "completed"),
        ("turn", "chat gpt-4.1-mini", 1, "completed"),
    ]
    failed = store.query("SELECT kind, name, error FROM spans WHERE status = 'failed'")
    assert failed == [("tools:execute", "add", "bad operand")]
    # Loading it again adds nothing.
    again = load_file(store, tmp_path / "traces.otlp.jsonl")
    assert again.already_loaded
    assert store.query("SELECT count(*) FROM events") == [(22,)]


def test_an_otel_runs_tokens_and_cost_add_up_as_a_native_runs_do(store: Store, tmp_path: Path) -> None:
    load_file(store, write_jsonl(tmp_path / "one.jsonl", [genai_run()]))
    run = get_run(store, "1" * 32)
    assert (run.prompt_tokens, run.completion_tokens) == (56 + 80, 5 + 3)
    assert run.cost_micro_usd == 30 + 37
    root = store.query("SELECT span_id FROM spans WHERE trace_id = ? AND kind = 'agent'", ["1" * 32])[0][0]
    usage = span_usage(store, "1" * 32, root)
    assert (usage.calls, usage.total_tokens, usage.micro_usd) == (2, 144, 67)


def test_a_run_reads_back_as_the_events_it_became(store: Store, tmp_path: Path) -> None:
    load_file(store, write_jsonl(tmp_path / "one.jsonl", [genai_run()]))
    events = run_events(store, "1" * 32)
    turn = next(e for e in events if e["type"] == "turn:end")
    assert turn["usage"] == {"promptTokens": 56, "completionTokens": 5, "totalTokens": 61}
    assert [e["type"] for e in events][:2] == ["agent:start", "turn:start"]  # in time order


def test_a_file_with_a_line_longer_than_the_sniffed_head_is_still_known(store: Store, tmp_path: Path) -> None:
    big = span("big", {"payload": "x" * 200_000})
    path = write_jsonl(tmp_path / "big.otlp.jsonl", [request(big), genai_run()])
    assert load_file(store, path).kind == "otlp-json"


def test_a_bad_span_names_its_line_and_place_and_nothing_is_stored(store: Store, tmp_path: Path) -> None:
    bad = json.loads(json.dumps(CORPUS[1]))
    bad["resourceSpans"][0]["scopeSpans"][0]["spans"][2]["traceId"] = "not-hex"
    path = write_jsonl(tmp_path / "bad.otlp.jsonl", [CORPUS[0], bad, CORPUS[2]])
    with pytest.raises(BadLinesError) as caught:
        load_file(store, path)
    (problem,) = caught.value.problems
    assert problem.line == 2
    assert problem.message.startswith("resourceSpans[0].scopeSpans[0].spans[2]: traceId 'not-hex'")
    assert store.query("SELECT count(*) FROM events") == [(0,)]
    result = load_file(store, path, bad_lines=BadLines.SKIP)
    assert (result.events, result.bad_lines) == (14, 1)
    assert {run.trace_id for run in list_runs(store)} == {"1" * 32, "3" * 32}


def test_a_line_that_is_not_a_request_is_named(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "mixed.otlp.jsonl"
    path.write_bytes(orjson.dumps(CORPUS[0]) + b"\n" + b"[1, 2]\n" + b'{"resourceSpans": [}\n')
    with pytest.raises(BadLinesError, match=r"line 2: an ExportTraceServiceRequest is a JSON object, not an array"):
        load_file(store, path)


def test_resource_and_scope_are_kept_with_each_span(store: Store, tmp_path: Path) -> None:
    document = request(span("s", {"k": 1}), scope="my.lib", resource={"service.name": "billing", "pod": "p-1"})
    load_file(store, write_jsonl(tmp_path / "r.jsonl", [document]))
    (start, _) = run_events(store, "0af7651916cd43dd8448eb211c80319c")
    assert start["otel"]["resource"] == {"service.name": "billing", "pod": "p-1"}
    assert start["otel"]["scope"] == {"name": "my.lib", "version": "1.0"}
    assert start["otel"]["attributes"] == {"k": 1}
    assert attributes({"k": 1}) == [{"key": "k", "value": {"intValue": "1"}}]
