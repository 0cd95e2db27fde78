"""fork_snapshot: an edited call returns its edit on a replay, later calls whose input changed run live,
the rest is served (the scripted model and the tool count what really ran)."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import pytest

from devtool.core import MemorySink, ScriptedModel, SnapshotError, create_agent, create_tool, prompt, run_with
from devtool.core.counterfactual import ForkError
from devtool.core.debugger import fork_snapshot, restore_snapshot
from devtool.core.model import Message

RESEARCH_TURN_0 = "root/agent:researcher:0/turn:scripted-model:0"
RESEARCH_TURN_1 = "root/agent:researcher:0/turn:scripted-model:1"
SEARCH = "root/agent:researcher:0/tool:search:0"


class World:
    """A run of three agents: a greeter (independent), a researcher (a prompt with the search tool) and a
    writer (prompted with the researcher's answer). Counts model requests and searches."""

    def __init__(self) -> None:
        self.searches: Counter[str] = Counter()
        self.asked: list[list[Message]] = []
        self.model = ScriptedModel(self._answer)

        def search(query: str) -> list[str]:
            self.searches[query] += 1
            return [f"{query} result"]

        tool = create_tool("search", search, description="search the web")
        self.greeter = create_agent("greeter", lambda props: prompt("say hi", model=self.model))
        self.researcher = create_agent(
            "researcher",
            lambda props: prompt(
                [{"role": "system", "content": "You research."}, {"role": "user", "content": props}],
                tools=[tool],
                model=self.model,
            ),
        )
        self.writer = create_agent("writer", lambda props: prompt(f"write about: {props}", model=self.model))

    def _answer(self, messages: list[Message]) -> Any:
        self.asked.append(messages)
        last = messages[-1]
        if last["role"] == "tool":
            return f"found {last['content']}"
        if last["content"] == "cats":
            return {"tool_calls": [{"name": "search", "arguments": {"query": "cats"}}]}
        return f"answer to {last['content']}"

    async def main(self) -> str:
        await self.greeter()
        found = await self.researcher("cats")
        return str(await self.writer(found))


def _recorded() -> tuple[World, dict[str, Any], str]:
    world, sink = World(), MemorySink()
    result = asyncio.run(run_with(world.main, sinks=[sink]))
    return world, dict(restore_snapshot(sink.events)), result


def _replayed(snapshot: dict[str, Any]) -> tuple[World, str, MemorySink]:
    world, sink = World(), MemorySink()
    result = asyncio.run(run_with(world.main, snapshot=snapshot, sinks=[sink]))
    return world, result, sink


def test_an_edited_tool_output_is_returned_and_only_the_turns_after_it_run() -> None:
    _, snapshot, _ = _recorded()
    fork = fork_snapshot(snapshot, outputs={SEARCH: ["dogs instead"]})
    world, result, _ = _replayed(fork)
    assert world.searches == Counter()  # the edited tool did not run
    # the researcher's second turn (it sees the edit) and the writer (sees its answer) ran: nothing else
    assert len(world.asked) == 2
    assert world.asked[0][-1]["content"] == '["dogs instead"]'
    assert result == 'answer to write about: found ["dogs instead"]'
    assert snapshot.get("metadata", {}).get("fork") is None  # the original is left as it was


def test_an_edited_answer_is_returned_without_asking_the_model() -> None:
    _, snapshot, _ = _recorded()
    fork = fork_snapshot(snapshot, outputs={RESEARCH_TURN_1: "nothing found"})
    world, result, _ = _replayed(fork)
    assert world.searches == Counter()
    assert [m[-1]["content"] for m in world.asked] == ["write about: nothing found"]  # the writer only
    assert result == "answer to write about: nothing found"


def test_an_edited_system_message_makes_exactly_the_turns_that_see_it_live() -> None:
    _, snapshot, _ = _recorded()
    edited = [{"role": "system", "content": "You research carefully."}, {"role": "user", "content": "cats"}]
    fork = fork_snapshot(snapshot, messages={RESEARCH_TURN_0: edited})
    world, result, _ = _replayed(fork)
    # both researcher turns carry the new system message; the tool input and the answer are unchanged,
    # so the search and the writer are served, and the greeter is untouched
    assert [m[0]["content"] for m in world.asked] == ["You research carefully."] * 2
    assert world.searches == Counter()
    assert result == 'answer to write about: found ["cats result"]'


def test_a_dropped_call_runs_again_and_a_fork_can_be_forked() -> None:
    _, snapshot, _ = _recorded()
    first = fork_snapshot(snapshot, drop=[SEARCH])
    second = fork_snapshot(first, outputs={RESEARCH_TURN_1: "edited"}, parent="abc")
    assert second["metadata"]["fork"]["calls"] == {SEARCH: {"live": True}, RESEARCH_TURN_1: {"output": "edited"}}
    world, _, _ = _replayed(second)
    assert world.searches == Counter({"cats": 1})
    assert len(world.asked) == 1  # the writer


@pytest.mark.parametrize(
    ("edits", "message"),
    [
        ({"outputs": {"root/agent:researcher:0": 1}}, "is no turn or tool call"),
        ({"outputs": {"tool:search:0": 1}}, "is no turn or tool call"),
        ({"outputs": {SEARCH: {1, 2}}}, "not a JSON value"),
        ({"messages": {RESEARCH_TURN_0: "hi"}}, "non-empty list"),
        ({"messages": {RESEARCH_TURN_0: [{"content": "x"}]}}, 'with a "role"'),
        ({"memory": {"root/agent:nobody:0": {}}}, "no frame"),
        ({}, "nothing to fork"),
    ],
)
def test_bad_edits_are_refused_with_the_call_named(edits: dict[str, Any], message: str) -> None:
    _, snapshot, _ = _recorded()
    with pytest.raises(ForkError, match=message):
        fork_snapshot(snapshot, **edits)


def test_a_malformed_edit_in_a_snapshot_is_refused_before_anything_runs() -> None:
    _, snapshot, _ = _recorded()
    snapshot["metadata"] = {"fork": {"calls": {SEARCH: {"outptu": 1}}}}
    world = World()
    with pytest.raises(SnapshotError, match=r"metadata\.fork\.calls"):
        asyncio.run(run_with(world.main, snapshot=snapshot))
    assert world.asked == []
