"""Our traces read by the TypeScript library as its own, and its traces read by us, alike.

`@rejelly/core`'s own `restoreSnapshot` (under Node, `testkit/rejelly/restore.mjs`) reads a Python
run's trace with no error and no warning, and gives the same frames by callId, with the same memory
and statuses, as our `restore_snapshot`, at the end and at cuts before and after sub-agents. Its
restore nests frames by stack order only, so the run is one of sequential sub-agents (where that is
right; interleaved parallel ones are where ours is better: tests/test_core_restore.py).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

from devtool.core import MemorySink, ScriptedModel, create_agent, memory, prompt, run_with
from devtool.core.debugger import restore_snapshot
from testkit import rejelly
from tests.conftest import CORPUS
from tests.core_programs import ToolLog, research_model, tools


def sequential_run() -> list[dict[str, Any]]:
    """An orchestrator running two researchers (a tool loop each) one after the other, then a sub-agent
    that fails (caught), then its own prompt."""
    kit = tools(ToolLog())

    async def researcher(props: dict[str, Any]) -> str:
        memory()["topic"] = props["topic"]
        answer = await prompt(f"research {props['topic']}", tools=[kit["search"]])
        memory()["answer"] = answer
        return str(answer)

    async def broken(props: Any) -> None:
        memory()["attempted"] = True
        raise RuntimeError("upstream 503")

    model = research_model()
    research = create_agent("researcher", researcher, model=model)
    fail = create_agent("broken", broken)

    async def lead(props: dict[str, Any]) -> dict[str, Any]:
        memory()["phase"] = "research"
        found = [await research({"topic": topic}) for topic in props["topics"]]
        try:
            await fail(None)
        except RuntimeError as exc:
            memory()["failure"] = str(exc)
        memory()["phase"] = "done"
        summary = await prompt("summarise", model=ScriptedModel(["all done"]))
        return {"found": found, "summary": summary}

    agent = create_agent("lead", lead)
    sink = MemorySink()
    asyncio.run(run_with(lambda: agent({"topics": ["a", "b"]}), sinks=[sink]))
    return sink.events


def by_call_id(frame: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    yield frame["callId"], {"agentId": frame["agentId"], "memory": frame["memory"], "status": frame["state"]["status"]}
    for child in frame["children"].values():
        yield from by_call_id(child)


def theirs(events: list[dict[str, Any]], **cut: str) -> dict[str, Any]:
    answer = rejelly.run("restore.mjs", {"events": events, **cut})
    assert answer["error"] is None
    assert answer["warnings"] == []
    return dict(by_call_id(answer["snapshot"]["root"]))


def ours(events: list[dict[str, Any]], **cut: Any) -> dict[str, Any]:
    frames = dict(by_call_id(restore_snapshot(events, **cut)["root"]))
    del frames["root"]  # the run's own frame: theirs is rooted at the first agent
    return frames


def test_its_restore_reads_our_trace_as_ours_does() -> None:
    events = sequential_run()
    mine = ours(events)
    assert set(mine) == {
        "root/agent:lead:0",
        "root/agent:lead:0/agent:researcher:0",
        "root/agent:lead:0/agent:researcher:1",
        "root/agent:lead:0/agent:broken:0",
    }
    assert mine["root/agent:lead:0/agent:broken:0"]["status"] == "failed"
    assert mine["root/agent:lead:0"]["memory"] == {"phase": "done", "failure": "upstream 503"}
    assert theirs(events) == mine


@pytest.mark.parametrize("anchor", ["before", "after"])
@pytest.mark.parametrize("agent", [1, 2, 3])
def test_its_restore_agrees_at_cuts_around_each_sub_agent(agent: int, anchor: str) -> None:
    events = sequential_run()
    span = [event["trace"]["spanId"] for event in events if event["type"] == "agent:start"][agent]
    assert theirs(events, spanId=span, anchor=anchor) == ours(events, span_id=span, anchor=anchor)


def test_its_warnings_are_seen() -> None:
    # The check above would pass vacuously if warnings went unseen: a zombie child makes it warn.
    lines = (CORPUS / "rejelly" / "zombie.trace.jsonl").read_text().splitlines()
    answer = rejelly.run("restore.mjs", {"events": [json.loads(line) for line in lines]})
    assert any("ended unexpectedly" in warning for warning in answer["warnings"])
