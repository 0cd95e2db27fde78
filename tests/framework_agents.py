"""Framework agents as their users write them, with no devtool decorator: for the tests of recording
frameworks whole (`devtool.instrument.install()` only).

Each program is a `travel` agent with one tool, `weather` (its side effect: `TOOL_RUNS` grows), and,
where the framework has one, a second agent: Pydantic AI delegates to a `guide` agent from a tool
(an agent run inside a tool call), the OpenAI Agents SDK's `triage` hands off to `travel`, LangGraph's
graph runs a subgraph. Two model requests each, one tool call between them (the Agents SDK's handoff:
one more request before them). Each has a sync entrypoint (`run_sync`, `Runner.run_sync`, `invoke`)
and an async one. `script(fake)` scripts the fake provider to answer each request by its last message.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from testkit.fake_provider import FakeProvider

KEY = "sk-frameworks-0123456789abcdef"
QUESTION = "Plan a day in Lisbon"
ANSWER = "Lisbon is sunny: walk the Alfama."
# The tool's side effect, so a test can tell a tool that ran from one a replay served.
TOOL_RUNS: list[str] = []


def weather(city: str) -> str:
    """The weather in a city."""
    TOOL_RUNS.append(city)
    return f"{city}: sunny"


def script(fake: FakeProvider, *, handoff: bool = False, cities: tuple[str, ...] = ("Lisbon",)) -> None:
    """Answers by each request's last message, so a replay's live requests get the same answers; the
    model asks for the weather of each of `cities` at once (parallel tool calls when more than one)."""
    calls = {"tool_calls": [{"name": "weather", "arguments": {"city": city}} for city in cities]}
    if handoff:
        fake.reply({"tool_calls": [{"name": "transfer_to_travel", "arguments": {}}]}, last=QUESTION, times=None)
        fake.reply(calls, last="travel", times=None)
    else:
        fake.reply(calls, last=QUESTION, times=None)
    fake.reply({"text": ANSWER}, last="sunny", times=None)


@dataclass(frozen=True)
class Program:
    """One framework's agent: what it is called, its entrypoints, and what one run of it makes."""

    name: str
    make: Callable[[FakeProvider], Callable[[], Any]]  # the entrypoint, sync or async, bound to the fake
    agents: tuple[str, ...]  # the framework's agent names (and LangGraph's nodes), as frames in start order
    tool_frame: str  # the callId of the frame the tool is called in
    requests: int = 2
    handoff: bool = False


def pydantic_ai_agent(fake: FakeProvider) -> Any:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    model = OpenAIChatModel("gpt-4.1-mini", provider=OpenAIProvider(base_url=fake.openai_base_url, api_key=KEY))
    return Agent(model, name="travel", instructions="You plan trips.", tools=[weather])


def pydantic_ai_sync(fake: FakeProvider) -> Callable[[], Any]:
    agent = pydantic_ai_agent(fake)
    return lambda: agent.run_sync(QUESTION).output


def pydantic_ai_async(fake: FakeProvider) -> Callable[[], Any]:
    agent = pydantic_ai_agent(fake)

    async def main() -> str:
        return (await agent.run(QUESTION)).output

    return main


def openai_agents_graph(fake: FakeProvider) -> Any:
    import agents
    import openai

    agents.set_default_openai_client(openai.AsyncOpenAI(base_url=fake.openai_base_url, api_key=KEY), False)
    agents.set_default_openai_api("chat_completions")
    agents.set_tracing_disabled(True)
    travel = agents.Agent(
        name="travel", instructions="You plan trips.", tools=[agents.function_tool(weather)], model="gpt-4.1-mini"
    )
    return agents.Agent(name="triage", instructions="You triage.", handoffs=[travel], model="gpt-4.1-mini")


def openai_agents_sync(fake: FakeProvider) -> Callable[[], Any]:
    import agents

    triage = openai_agents_graph(fake)
    return lambda: str(agents.Runner.run_sync(triage, QUESTION).final_output)


def openai_agents_async(fake: FakeProvider) -> Callable[[], Any]:
    import agents

    triage = openai_agents_graph(fake)

    async def main() -> str:
        return str((await agents.Runner.run(triage, QUESTION)).final_output)

    return main


def langgraph_agent(fake: FakeProvider) -> Any:
    import httpx
    from langchain.agents import create_agent
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI

    # Its own async HTTP client: langchain-openai's default one is shared by the process and bound to the
    # first event loop, and a test runs several (a program is run once a process).
    model = ChatOpenAI(
        model="gpt-4.1-mini",
        base_url=fake.openai_base_url,
        api_key=KEY,  # type: ignore[arg-type]
        http_async_client=httpx.AsyncClient(),
    )
    return create_agent(model, tools=[tool(weather)], system_prompt="You plan trips.", name="travel")


def _last_text(state: dict[str, Any]) -> str:
    return str(state["messages"][-1].content)


def langgraph_sync(fake: FakeProvider) -> Callable[[], Any]:
    graph = langgraph_agent(fake)
    return lambda: _last_text(graph.invoke({"messages": [{"role": "user", "content": QUESTION}]}))


def langgraph_async(fake: FakeProvider) -> Callable[[], Any]:
    graph = langgraph_agent(fake)

    async def main() -> str:
        return _last_text(await graph.ainvoke({"messages": [{"role": "user", "content": QUESTION}]}))

    return main


HANDED_OFF = "root/agent:triage:0/agent:travel:0"
NODES = ("travel", "model", "tools", "model")  # the graph, and its nodes as they ran
PROGRAMS = [
    Program("pydantic-ai-sync", pydantic_ai_sync, ("travel",), "root/agent:travel:0"),
    Program("pydantic-ai-async", pydantic_ai_async, ("travel",), "root/agent:travel:0"),
    Program("openai-agents-sync", openai_agents_sync, ("triage", "travel"), HANDED_OFF, requests=3, handoff=True),
    Program("openai-agents-async", openai_agents_async, ("triage", "travel"), HANDED_OFF, requests=3, handoff=True),
    Program("langgraph-sync", langgraph_sync, NODES, "root/agent:travel:0/agent:tools:0"),
    Program("langgraph-async", langgraph_async, NODES, "root/agent:travel:0/agent:tools:0"),
]


def call(entrypoint: Callable[[], Any]) -> Any:
    """The entrypoint's result, as `devtool run` gets it: a sync one with no event loop in its thread."""
    result = entrypoint()
    return asyncio.run(result) if asyncio.iscoroutine(result) else result
