"""Pydantic AI recorded with no capability of ours (`frameworks/pydantic_ai.py`: `Agent.iter`'s wrapper
opens the frame, `FunctionToolset.call_tool`'s journals the tool calls), in the cases that path must
not lose: a run's own `toolsets=`, an agent whose `Toolset` capability brings its tools, a run with
capabilities of its own and an agent with a toolset made per run (both journaled by a capability
instead, once), an unnamed agent (named by its variable, as Pydantic AI names it), an agent run inside
its own tool call. Each against the fake provider over real HTTP, counting requests and the tool's
runs: recorded, the tool runs once and is journaled once, in the agent's frame; a whole replay asks
nothing and runs no tool."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.capabilities.toolset import Toolset
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.toolsets import FunctionToolset

import devtool
import devtool.instrument
from devtool.core import MemorySink, run_with
from devtool.core.debugger import restore_snapshot
from testkit.fake_provider import FakeProvider
from tests.framework_agents import ANSWER, KEY, QUESTION, TOOL_RUNS, script, weather

devtool.instrument.install()


def model(fake: FakeProvider) -> OpenAIChatModel:
    return OpenAIChatModel("gpt-4.1-mini", provider=OpenAIProvider(base_url=fake.openai_base_url, api_key=KEY))


def recorded_then_replayed(fake: FakeProvider, main: Callable[[], Any]) -> list[dict[str, Any]]:
    """`main` recorded (the tool runs once, two requests) and replayed whole (none, and no tool run): the
    recorded events."""
    script(fake)
    TOOL_RUNS.clear()
    sink = MemorySink()
    with devtool.record("trip", to=sink):
        assert asyncio.run(main()) == ANSWER
    assert (fake.count(), TOOL_RUNS) == (2, ["Lisbon"])
    TOOL_RUNS.clear()
    assert asyncio.run(run_with(main, snapshot=restore_snapshot(sink.events))) == ANSWER
    assert (fake.count(), TOOL_RUNS) == (2, [])
    return sink.events


def journaled_in(events: list[dict[str, Any]], frame: str) -> dict[str, Any]:
    """The one tool call's result, journaled in `frame`."""
    (result,) = [r for e in events if e["type"] == "tools:execute:end" for r in e["toolResults"]]
    assert (result["toolName"], result["input"], result["output"]) == ("weather", {"city": "Lisbon"}, "Lisbon: sunny")
    assert result["callPath"] == f"{frame}/tool:weather:0"
    return result


def test_a_runs_own_toolsets_are_journaled(fake_provider: FakeProvider) -> None:
    travel = Agent(model(fake_provider), name="travel")

    async def main() -> str:
        return (await travel.run(QUESTION, toolsets=[FunctionToolset([weather])])).output

    journaled_in(recorded_then_replayed(fake_provider, main), "root/agent:travel:0")


class Counted(AbstractCapability[Any]):
    """A capability of the user's own, which must still run: it counts the tool calls it is shown."""

    def __init__(self) -> None:
        self.shown: list[str] = []

    async def before_tool_execute(self, ctx: Any, *, call: Any, tool_def: Any, args: Any) -> Any:
        self.shown.append(tool_def.name)
        return args


def test_a_run_with_capabilities_of_its_own_keeps_them_and_journals_its_tools(fake_provider: FakeProvider) -> None:
    travel = Agent(model(fake_provider), name="travel", tools=[weather])
    counted = Counted()

    async def main() -> str:
        return (await travel.run(QUESTION, capabilities=[counted])).output

    journaled_in(recorded_then_replayed(fake_provider, main), "root/agent:travel:0")
    # It ran in the recording; in the replay the journal answers around the tool's whole execution.
    assert counted.shown == ["weather"]


def test_an_agent_whose_capability_brings_its_tools_has_them_journaled(fake_provider: FakeProvider) -> None:
    travel = Agent(model(fake_provider), name="travel", capabilities=[Toolset(FunctionToolset([weather]))])

    async def main() -> str:
        return (await travel.run(QUESTION)).output

    journaled_in(recorded_then_replayed(fake_provider, main), "root/agent:travel:0")


def test_an_agent_with_a_toolset_made_per_run_has_its_tools_journaled_once(fake_provider: FakeProvider) -> None:
    travel = Agent(model(fake_provider), name="travel")

    @travel.toolset
    def tools(ctx: Any) -> FunctionToolset[Any]:
        return FunctionToolset([weather])

    async def main() -> str:
        return (await travel.run(QUESTION)).output

    journaled_in(recorded_then_replayed(fake_provider, main), "root/agent:travel:0")


def test_an_unnamed_agent_is_named_by_its_variable(fake_provider: FakeProvider) -> None:
    planner = Agent(model(fake_provider), tools=[weather])

    async def main() -> str:
        return (await planner.run(QUESTION)).output

    events = recorded_then_replayed(fake_provider, main)
    assert [e["agentId"] for e in events if e["type"] == "agent:start"] == ["planner"]
    journaled_in(events, "root/agent:planner:0")


def test_an_agent_run_inside_its_own_tool_call_journals_each_call_once(fake_provider: FakeProvider) -> None:
    travel = Agent(model(fake_provider), name="travel")

    @travel.tool_plain
    async def ask_again(question: str) -> str:
        """Ask the travel agent again."""
        return (await travel.run(question, toolsets=[FunctionToolset([weather])])).output

    fake_provider.reply({"tool_calls": [{"name": "ask_again", "arguments": {"question": QUESTION}}]}, last="lead")
    fake_provider.reply({"text": "Done."}, last=ANSWER, times=None)
    script(fake_provider)
    TOOL_RUNS.clear()

    async def main() -> str:
        return (await travel.run("lead: " + QUESTION)).output

    sink = MemorySink()
    with devtool.record("trip", to=sink):
        assert asyncio.run(main()) == "Done."
    assert (fake_provider.count(), TOOL_RUNS) == (4, ["Lisbon"])
    ends = [r["callPath"] for e in sink.events if e["type"] == "tools:execute:end" for r in e["toolResults"]]
    inner = "root/agent:travel:0/agent:travel:0"  # inside the tool call's span, numbered in its agent
    assert ends == [f"{inner}/tool:weather:0", "root/agent:travel:0/tool:ask_again:0"]
    TOOL_RUNS.clear()
    assert asyncio.run(run_with(main, snapshot=restore_snapshot(sink.events))) == "Done."
    assert (fake_provider.count(), TOOL_RUNS) == (4, [])
