"""A run's observer (`run_with(observe=...)`): it hears each journal lookup, prompt and tool, with the call's
callId, agent, request and whether the journal answered; raising there stops the call before it runs."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from devtool.core import MemorySink, ScriptedModel, create_agent, create_tool, prompt, run_with
from devtool.core.debugger import dump_snapshot
from devtool.core.lookups import Lookup


def program(model: ScriptedModel, ran: list[str]) -> Any:
    def search(query: str) -> str:
        ran.append(query)
        return f"3 hits for {query}"

    tool = create_tool("search", search, parameters={"type": "object", "properties": {"query": {"type": "string"}}})

    async def handler(props: dict[str, Any]) -> Any:
        answer = await prompt(f"research {props['topic']}", tools=[tool])
        return answer, dump_snapshot()

    return create_agent("researcher", handler, model=model)


def scripted() -> ScriptedModel:
    return ScriptedModel([{"tool_calls": [{"name": "search", "arguments": {"query": "rust"}}]}, "rust is popular"])


def test_the_observer_hears_every_lookup_recorded_and_replayed() -> None:
    heard: list[Lookup] = []
    sink = MemorySink()
    (answer, snapshot) = asyncio.run(
        run_with(lambda: program(scripted(), [])({"topic": "rust"}), observe=heard.append, sinks=[sink])
    )
    assert answer == "rust is popular"
    assert [(h.kind, h.agent_id, h.call_id, h.found) for h in heard] == [
        ("prompt", "researcher", "root/agent:researcher:0/turn:scripted-model:0", False),
        ("tool", "researcher", "root/agent:researcher:0/tool:search:0", False),
        ("prompt", "researcher", "root/agent:researcher:0/turn:scripted-model:1", False),
    ]
    first = heard[0].request
    assert first["messages"][0]["content"] == "research rust"
    assert first["tools"][0]["name"] == "search"
    assert heard[1].request == {"name": "search", "input": {"query": "rust"}}
    hashes = [e["contentHash"] for e in sink.events if e["type"] == "turn:start"]
    assert hashes == [heard[0].content_hash, heard[2].content_hash]

    replayed: list[Lookup] = []
    ran: list[str] = []
    model = ScriptedModel([])
    asyncio.run(run_with(lambda: program(model, ran)({"topic": "rust"}), snapshot=snapshot, observe=replayed.append))
    assert [(h.call_id, h.found) for h in replayed] == [(h.call_id, True) for h in heard]
    assert [h.content_hash for h in replayed] == [h.content_hash for h in heard]
    assert model.calls == 0
    assert ran == []


class Refused(Exception):
    pass


def test_an_observer_that_raises_stops_the_call_before_the_model_or_tool_runs() -> None:
    def refuse_prompts(lookup: Lookup) -> None:
        if lookup.kind == "prompt":
            raise Refused(lookup.call_id)

    model, sink = scripted(), MemorySink()
    with pytest.raises(Refused, match="turn:scripted-model:0"):
        asyncio.run(run_with(lambda: program(model, [])({"topic": "rust"}), observe=refuse_prompts, sinks=[sink]))
    assert model.calls == 0
    (end,) = [e for e in sink.events if e["type"] == "turn:end"]
    assert end["success"] is False
    assert end["error"]["name"] == "Refused"
    assert not any(e["type"] == "model:call:start" for e in sink.events)

    def refuse_tools(lookup: Lookup) -> None:
        if lookup.kind == "tool":
            raise Refused(lookup.call_id)

    ran: list[str] = []
    sink = MemorySink()
    asyncio.run(run_with(lambda: program(scripted(), ran)({"topic": "rust"}), observe=refuse_tools, sinks=[sink]))
    assert ran == []  # the model was told the tool failed; the tool never ran
    (batch,) = [e for e in sink.events if e["type"] == "tools:execute:end"]
    assert batch["toolResults"][0]["error"]["name"] == "Refused"
