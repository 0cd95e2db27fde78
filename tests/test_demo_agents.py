"""The demo agents run deterministically and replay from their own dumps with no model call."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from devtool.core import MemorySink, PromptError, ScriptedModel, run_with
from devtool.core.debugger import dump_snapshot
from devtool.demo import failing, research


def test_research_runs_parallel_researchers_with_tool_loops() -> None:
    sink = MemorySink()
    result = asyncio.run(run_with(lambda: research.main({}), sinks=[sink]))
    assert [f["topic"] for f in result["findings"]] == ["rust", "go", "python"]
    assert result["findings"][0]["sources"] == ["https://example.org/rust-async", "https://example.org/rust-hiring"]
    agents = [e["callId"] for e in sink.events if e["type"] == "agent:start"]
    assert agents == [
        "root/agent:research-lead:0",
        "root/agent:research-lead:0/agent:researcher:0",
        "root/agent:research-lead:0/agent:researcher:1",
        "root/agent:research-lead:0/agent:researcher:2",
        "root/agent:research-lead:0/agent:writer:0",
    ]
    batches = [e for e in sink.events if e["type"] == "tools:execute:end"]
    assert {r["toolName"] for b in batches for r in b["toolResults"]} == {"web_search", "fetch_page"}
    assert asyncio.run(run_with(lambda: research.main({}))) == result


def test_research_replays_from_a_dump_with_no_model_call() -> None:
    box: dict[str, Any] = {}
    props = {"question": research.DEFAULT_QUESTION}

    async def record() -> Any:
        result = await research.build(research.scripted_model())(props)
        box["snapshot"] = dump_snapshot()
        return result

    original = asyncio.run(run_with(record))
    silent = ScriptedModel([], id="demo-model", provider="scripted")
    assert asyncio.run(run_with(lambda: research.build(silent)(props), snapshot=box["snapshot"])) == original
    assert silent.calls == 0


def test_failing_demo_fails_with_a_schema_error_after_a_caught_probe_failure() -> None:
    sink = MemorySink()
    with pytest.raises(PromptError, match=r"\$.healthy must be boolean"):
        asyncio.run(run_with(lambda: failing.main({}), sinks=[sink]))
    failed = [e["agentId"] for e in sink.events if e["type"] == "agent:end" and not e["success"]]
    assert failed == ["prober", "fallback", "release-checker"]
    assert sink.events[-1]["type"] == "runWith:end"
    assert sink.events[-1]["success"] is False
