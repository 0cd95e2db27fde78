"""Every loader, against real traces and journals: the TypeScript library's, `promptise`'s and ours."""

from __future__ import annotations

import asyncio
import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest

from devtool.store import BadLines, Store, load_file
from devtool.store.queries import list_runs, run_events
from tests.conftest import CORPUS

REJELLY = sorted((CORPUS / "rejelly").glob("*.trace.jsonl"))
JOURNALS = sorted(p for p in (CORPUS / "promptise").glob("*.journal.jsonl") if p.stat().st_size > 0)


def _ms(timestamp: str) -> float:
    """An ISO 8601 time as ms since the epoch; a naive one is UTC."""
    parsed = datetime.fromisoformat(timestamp)
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp() * 1000


def read_jsonl(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("path", REJELLY, ids=lambda p: p.name)
def test_typescript_traces_load_event_for_event(store: Store, path: Path) -> None:
    events = read_jsonl(path)
    result = load_file(store, path)
    assert result.kind == "trace-jsonl"
    assert result.events == len(events)
    trace_id = events[0]["trace"]["traceId"]  # type: ignore[index]
    assert result.traces == (trace_id,)
    # Stored as loaded: the same dicts come back, in emit order.
    assert run_events(store, trace_id) == sorted(events, key=lambda e: e["timestamp"])  # type: ignore[arg-type,return-value]
    starts = sum(1 for e in events if str(e["type"]).endswith(":start"))
    ends = sum(1 for e in events if str(e["type"]).endswith(":end"))
    spans = store.query(
        "SELECT count(*) FILTER (WHERE NOT instant), count(*) FILTER (WHERE status = 'running') FROM spans"
    )
    assert spans == [(starts, starts - ends)]


@pytest.mark.parametrize("path", REJELLY, ids=lambda p: p.name)
def test_run_summaries_add_up_what_the_trace_says(store: Store, path: Path) -> None:
    events = read_jsonl(path)
    load_file(store, path)
    (run,) = list_runs(store)
    usage = [e["usage"] for e in events if e["type"] == "model:call:end" and "usage" in e]
    assert run.prompt_tokens == sum(u["promptTokens"] for u in usage)  # type: ignore[index]
    assert run.completion_tokens == sum(u["completionTokens"] for u in usage)  # type: ignore[index]
    first_agent = next(e for e in events if e["type"] == "agent:start")
    assert run.name == first_agent["agentId"]
    assert run.events == len(events)
    assert run.agents == sum(1 for e in events if e["type"] == "agent:start")
    assert run.status == "completed"
    assert run.duration_ms == max(e["timestamp"] for e in events) - min(e["timestamp"] for e in events)  # type: ignore[type-var,operator]


def test_a_json_array_loads_as_its_jsonl_would(store: Store, tmp_path: Path) -> None:
    source = CORPUS / "rejelly" / "nested.trace.jsonl"
    array = tmp_path / "nested.json"
    array.write_bytes(orjson.dumps(read_jsonl(source), option=orjson.OPT_INDENT_2))
    as_array = load_file(store, array)
    spans_of_array = store.query("SELECT * EXCLUDE (start_event_id, end_event_id) FROM spans ORDER BY span_id")
    other = Store(tmp_path / "other.duckdb")
    try:
        load_file(other, source)
        assert other.query("SELECT * EXCLUDE (start_event_id, end_event_id) FROM spans ORDER BY span_id") == (
            spans_of_array
        )
    finally:
        other.close()
    assert (as_array.kind, as_array.events, as_array.spans) == ("trace-json-array", 82, 21)


@pytest.mark.parametrize("path", JOURNALS, ids=lambda p: p.name)
def test_promptise_journals_load_the_entries_it_reads(store: Store, path: Path) -> None:
    """Ids (derived ones included), types and timestamps as `promptise` read them, in order."""
    oracle = json.loads(path.with_name(path.name.replace(".journal.jsonl", ".oracle.json")).read_text())
    result = load_file(store, path, bad_lines=BadLines.SKIP)
    assert result.kind == "journal-jsonl"
    assert result.processes == (oracle["process_id"],)
    stored = store.query(
        "SELECT entry_id, entry_type, ts_ms FROM journal_entries WHERE process_id = ? ORDER BY entry_seq",
        [oracle["process_id"]],
    )
    expected = [(i, t, _ms(ts)) for i, t, ts in oracle["entries_read"]]
    assert [(i, t) for i, t, _ in stored] == [(i, t) for i, t, _ in expected]
    assert [ms for *_, ms in stored] == pytest.approx([ms for *_, ms in expected], abs=0.01)


def test_the_edge_journal_skips_exactly_what_promptise_skips(store: Store) -> None:
    result = load_file(store, CORPUS / "promptise" / "edge-shapes.journal.jsonl", bad_lines=BadLines.SKIP)
    assert [(p.line, p.column, p.message) for p in result.problems] == [
        (20, 1, "not JSON: “this is not json”"),
        (21, None, 'no "process_id"'),
    ]


def test_a_journal_loaded_again_after_it_grew_adds_only_the_new_entries(store: Store, tmp_path: Path) -> None:
    source = CORPUS / "promptise" / "billing-ops.journal.jsonl"
    journal = tmp_path / "billing-ops.jsonl"
    all_lines = source.read_text().splitlines(keepends=True)
    journal.write_text("".join(all_lines[:6]))
    assert load_file(store, journal).journal_entries == 6
    journal.write_text("".join(all_lines))
    assert load_file(store, journal).journal_entries == 4
    assert store.query("SELECT count(*), count(DISTINCT entry_id) FROM journal_entries") == [(10, 10)]


def test_the_format_comes_from_the_content_not_the_name(store: Store, tmp_path: Path) -> None:
    trace = shutil.copy(CORPUS / "rejelly" / "simple.trace.jsonl", tmp_path / "journal.json")
    journal = shutil.copy(CORPUS / "promptise" / "billing-ops.journal.jsonl", tmp_path / "trace.jsonl")
    array = tmp_path / "events.jsonl"
    array.write_bytes(orjson.dumps(read_jsonl(CORPUS / "rejelly" / "zombie.trace.jsonl")))
    assert load_file(store, trace).kind == "trace-jsonl"
    assert load_file(store, journal).kind == "journal-jsonl"
    assert load_file(store, array).kind == "trace-json-array"


def test_a_utf8_bom_and_crlf_line_ends_are_fine(store: Store, tmp_path: Path) -> None:
    text = (CORPUS / "rejelly" / "simple.trace.jsonl").read_bytes()
    path = tmp_path / "windows.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + text.replace(b"\n", b"\r\n"))
    assert load_file(store, path).events == 21


def test_traces_written_by_devtool_core_load(store: Store, tmp_path: Path) -> None:
    from devtool.core import JsonlSink, ScriptedModel, create_agent, create_tool, prompt, run_with

    search = create_tool(
        "search",
        lambda query: {"hits": [query]},
        parameters={"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    )

    async def research(props: dict[str, str]) -> object:
        return await prompt(f"research {props['topic']}", tools=[search])

    model = ScriptedModel([{"tool_calls": [{"name": "search", "arguments": {"query": "duckdb"}}]}, "done"])
    agent = create_agent("researcher", research, model=model)
    path = tmp_path / "ours.jsonl"
    sink = JsonlSink(path)
    try:
        asyncio.run(run_with(lambda: agent({"topic": "duckdb"}), sinks=[sink]))
    finally:
        sink.close()
    events = read_jsonl(path)
    result = load_file(store, path)
    assert result.events == len(events)
    assert store.query("SELECT count(*) FROM spans WHERE status <> 'completed'") == [(0,)]
    calls = store.query("SELECT call_id FROM spans WHERE kind = 'agent'")
    assert calls == [("root/agent:researcher:0",)]
