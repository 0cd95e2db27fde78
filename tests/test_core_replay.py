"""Record a run, dump it, replay it: every prompt and tool served from the journal."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from devtool.core import MemorySink, ModelError, ScriptedModel, create_agent, memory, prompt, run_with
from devtool.core.debugger import dump_snapshot
from devtool.core.snapshot import AgentSnapshot
from tests.core_programs import ToolLog, orchestrator, research_model

PROPS = {"topics": ["rust", "go", "zig"]}


async def record(props: dict[str, Any] = PROPS) -> tuple[Any, AgentSnapshot, ScriptedModel, ToolLog]:
    model, log, box = research_model(), ToolLog(), {}
    result = await run_with(lambda: orchestrator(model, log, dump_into=box)(props))
    return result, box["snapshot"], model, log


def test_round_trip_replays_with_no_model_or_tool_call() -> None:
    result, snapshot, model, log = asyncio.run(record())
    assert model.calls == 6  # two turns for each of three researchers
    assert log.calls == {"search": 3, "lookup": 3}

    replay_model, replay_log, sink = ScriptedModel([]), ToolLog(), MemorySink()
    replayed = asyncio.run(
        run_with(lambda: orchestrator(replay_model, replay_log)(PROPS), snapshot=snapshot, sinks=[sink])
    )

    assert replayed == result
    assert replay_model.calls == 0
    assert replay_log.total == 0
    turns = [e for e in sink.events if e["type"] == "turn:end"]
    assert len(turns) == 6
    assert all(e["cache"] for e in turns)
    tool_results = [r for e in sink.events if e["type"] == "tools:execute:end" for r in e["toolResults"]]
    assert len(tool_results) == 6
    assert all(r["cache"] for r in tool_results)
    assert not any(e["type"] == "model:call:start" for e in sink.events)


def test_dump_holds_the_frame_tree_with_call_ids_status_and_memory() -> None:
    result, snapshot, _, _ = asyncio.run(record())
    root = snapshot["root"]
    assert root["callId"] == "root"
    assert root["state"] == {"status": "running"}
    (orch,) = root["children"].values()
    assert orch["callId"] == "root/agent:orchestrator:0"
    assert orch["state"]["status"] == "running"  # the dump was taken at the end of its handler
    assert orch["memory"] == {"phase": "done", "failures": ["upstream 503"]}
    children = orch["children"]
    assert list(children) == [
        "root/agent:orchestrator:0/agent:researcher:0",
        "root/agent:orchestrator:0/agent:researcher:1",
        "root/agent:orchestrator:0/agent:researcher:2",
        "root/agent:orchestrator:0/agent:checker:0",
        "root/agent:orchestrator:0/agent:broken:0",
    ]
    # Parallel researchers were numbered in list order.
    assert [c["memory"]["topic"] for c in list(children.values())[:3]] == ["rust", "go", "zig"]
    assert children["root/agent:orchestrator:0/agent:researcher:1"]["state"] == {
        "status": "completed",
        "output": result["found"][1],
    }
    broken = children["root/agent:orchestrator:0/agent:broken:0"]
    assert broken["state"]["status"] == "failed"
    assert broken["state"]["error"]["message"] == "upstream 503"
    assert broken["memory"] == {"attempted": True}
    checker = children["root/agent:orchestrator:0/agent:checker:0"]
    assert len(checker["journal"]["tool"]) == 1  # three identical lookups share one entry
    assert list(checker["children"]) == ["root/agent:orchestrator:0/agent:checker:0/agent:leaf:0"]
    researcher = children["root/agent:orchestrator:0/agent:researcher:0"]
    assert len(researcher["journal"]["prompt"]) == 2
    assert len(researcher["journal"]["tool"]) == 1
    assert researcher["budgetState"]["own"]["callCount"] == 2
    assert orch["budgetState"]["own"]["callCount"] == 0
    assert orch["budgetState"]["aggregate"]["callCount"] == 6
    assert root["budgetState"]["aggregate"]["totalTokens"] == sum(
        c["budgetState"]["aggregate"]["totalTokens"] for c in children.values()
    )


def test_replay_restores_memory_before_the_handler_runs() -> None:
    seen: list[Any] = []

    async def handler(props: Any) -> int:
        seen.append(dict(memory()))
        memory()["visits"] = memory().get("visits", 0) + 1
        return 1

    counter = create_agent("counter", handler)
    box: dict[str, Any] = {}

    async def main() -> None:
        await counter(None)
        box["snapshot"] = dump_snapshot()

    asyncio.run(run_with(main))
    asyncio.run(run_with(lambda: counter(None), snapshot=box["snapshot"]))
    assert seen == [{}, {"visits": 1}]


def test_changing_one_prompt_input_calls_the_model_for_that_prompt_only() -> None:
    _, snapshot, _, _ = asyncio.run(record())
    changed = {"topics": ["rust", "GO", "zig"]}
    model, log = research_model(), ToolLog()
    asyncio.run(run_with(lambda: orchestrator(model, log)(changed), snapshot=snapshot))
    # Only the second researcher's prompt changed: its two turns and its search run for real.
    assert model.calls == 2
    assert log.calls == {"search": 1}


def test_a_new_result_from_a_replay_is_journaled_and_dumped() -> None:
    _, snapshot, _, _ = asyncio.run(record())
    changed = {"topics": ["rust", "GO", "zig"]}
    box: dict[str, Any] = {}
    asyncio.run(run_with(lambda: orchestrator(research_model(), ToolLog(), dump_into=box)(changed), snapshot=snapshot))
    second = box["snapshot"]["root"]["children"]["root/agent:orchestrator:0"]["children"][
        "root/agent:orchestrator:0/agent:researcher:1"
    ]
    # The old entries (topic "go") and the new ones (topic "GO") are both there.
    assert len(second["journal"]["prompt"]) == 4
    assert len(second["journal"]["tool"]) == 2
    model, log = ScriptedModel([]), ToolLog()
    asyncio.run(run_with(lambda: orchestrator(model, log)(changed), snapshot=box["snapshot"]))
    assert model.calls == 0
    assert log.total == 0


def test_replay_without_a_journal_entry_runs_for_real_and_runs_out_of_script() -> None:
    async def ask(props: Any) -> str:
        return await prompt("hello")

    agent = create_agent("asker", ask, model=ScriptedModel([]))
    with pytest.raises(ModelError, match="no answer left"):
        asyncio.run(run_with(lambda: agent(None)))
