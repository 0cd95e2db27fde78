"""Framework agents recorded whole with `devtool.instrument.install()` and no decorator
(`framework_agents.PROGRAMS`: Pydantic AI, the OpenAI Agents SDK with a handoff, LangGraph; each with a
sync and an async entrypoint), against the fake provider over real HTTP: the run holds the framework's
agents as frames and its tool calls with their inputs; a whole replay asks nothing and runs no tool; a
cut before the last model request asks once and runs no tool; a cut before the tool call runs it once.
And a `@devtool.record` sync `main()` recorded and replayed through `devtool run` (no event loop in its
thread), which compares equal, frame for frame, with its replay."""

from __future__ import annotations

import asyncio
import inspect
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

import devtool
import devtool.instrument
from devtool.actions.compare import compare
from devtool.cli.run import in_thread
from devtool.core import MemorySink, run_with
from devtool.core.debugger import restore_snapshot
from devtool.store import Store
from devtool.store.load import load_file
from testkit.fake_provider import FakeProvider
from tests.conftest import REPO
from tests.framework_agents import ANSWER, PROGRAMS, QUESTION, TOOL_RUNS, Program, call, script, weather

devtool.instrument.install()


def recorded(program: Program, fake: FakeProvider) -> tuple[Any, list[dict[str, Any]]]:
    """The program's output and events, recorded with `devtool.record` only."""
    sink = MemorySink()
    with devtool.record(program.name, to=sink):
        output = call(program.make(fake))
    return output, sink.events


def replayed(program: Program, snapshot: Any, fake: FakeProvider) -> tuple[Any, int, list[Any]]:
    """The program replayed from `snapshot` as `devtool run` runs it (a sync entrypoint in a worker
    thread; its clients made afresh, as in the new process a replay is): its output, the requests that
    reached the provider, the events."""
    before, sink, entrypoint = fake.count(), MemorySink(), program.make(fake)
    run = entrypoint if inspect.iscoroutinefunction(entrypoint) else in_thread(entrypoint)
    output = asyncio.run(run_with(run, snapshot=snapshot, sinks=[sink]))
    return output, fake.count() - before, sink.events


def spans(events: list[Any], kind: str) -> list[str]:
    return [e["trace"]["spanId"] for e in events if e["type"] == kind]


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_a_framework_agent_is_recorded_whole_and_replays_without_running_its_tool(
    program: Program, fake_provider: FakeProvider
) -> None:
    script(fake_provider, handoff=program.handoff)
    TOOL_RUNS.clear()
    output, events = recorded(program, fake_provider)
    assert output == ANSWER
    assert fake_provider.count() == program.requests
    assert TOOL_RUNS == ["Lisbon"]

    # The framework's own agent names are the frames, nested as they ran (a handoff inside its triage,
    # LangGraph's nodes inside their graph).
    starts = [e for e in events if e["type"] == "agent:start"]
    assert [e["agentId"] for e in starts] == list(program.agents)
    assert program.tool_frame in [e["callId"] for e in starts]
    # The tool call is journaled with its input and output, in the frame of the agent that called it.
    (result,) = [r for e in events if e["type"] == "tools:execute:end" for r in e["toolResults"]]
    assert result["toolName"] == "weather"
    assert result["input"] == {"city": "Lisbon"}
    assert result["output"] == "Lisbon: sunny"
    assert result["callPath"] == f"{program.tool_frame}/tool:weather:0"
    assert result["contentHash"]
    assert not result["cache"]
    turns = [e for e in events if e["type"] == "turn:start"]
    assert QUESTION in orjson.dumps(turns[0]["messages"]).decode()
    assert all(turn["callId"].startswith(starts[0]["callId"] + "/") for turn in turns)

    # A whole replay asks nothing, runs no tool, and gives the same answer.
    TOOL_RUNS.clear()
    again, asked, replay_events = replayed(program, restore_snapshot(events), fake_provider)
    assert (again, asked, TOOL_RUNS) == (ANSWER, 0, [])
    assert [r["cache"] for e in replay_events if e["type"] == "tools:execute:end" for r in e["toolResults"]] == [True]

    # A cut before the last model request: that one request, and the tool before it served.
    last_turn = spans(events, "turn:start")[-1]
    again, asked, _ = replayed(program, restore_snapshot(events, span_id=last_turn, anchor="before"), fake_provider)
    assert (again, asked, TOOL_RUNS) == (ANSWER, 1, [])

    # A cut before the tool call: the tool runs once, and the request after it is made.
    (tool_span,) = spans(events, "tools:execute:start")
    again, asked, _ = replayed(program, restore_snapshot(events, span_id=tool_span, anchor="before"), fake_provider)
    assert (again, asked, TOOL_RUNS) == (ANSWER, 1, ["Lisbon"])


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_parallel_tool_calls_number_in_the_models_order_in_a_run_and_its_replay(
    program: Program, fake_provider: FakeProvider
) -> None:
    cities = ("Lisbon", "Porto", "Faro")
    script(fake_provider, handoff=program.handoff, cities=cities)
    TOOL_RUNS.clear()
    _, events = recorded(program, fake_provider)
    assert sorted(TOOL_RUNS) == sorted(cities)

    def numbered(events: list[Any]) -> dict[str, tuple[str, bool]]:
        results = [r for e in events if e["type"] == "tools:execute:end" for r in e["toolResults"]]
        return {r["input"]["city"]: (r["callPath"], r["cache"]) for r in results}

    # Numbered in the model's order (the tool's seq; LangGraph's: the seq of the `tools` node run for it).
    paths = numbered(events)
    assert [paths[city][0] for city in cities] == sorted(path for path, _ in paths.values())
    assert len({path for path, _ in paths.values()}) == len(cities)
    assert not any(cached for _, cached in paths.values())
    TOOL_RUNS.clear()
    _, asked, replay_events = replayed(program, restore_snapshot(events), fake_provider)
    assert (asked, TOOL_RUNS) == (0, [])
    assert numbered(replay_events) == {city: (path, True) for city, (path, _) in paths.items()}


def test_an_agent_run_as_a_tool_is_drawn_inside_that_tool_call(fake_provider: FakeProvider) -> None:
    import agents
    import openai

    from tests.framework_agents import KEY

    agents.set_default_openai_client(openai.AsyncOpenAI(base_url=fake_provider.openai_base_url, api_key=KEY), False)
    agents.set_default_openai_api("chat_completions")
    agents.set_tracing_disabled(True)
    travel = agents.Agent(name="travel", instructions="You plan trips.", tools=[agents.function_tool(weather)])
    lead = agents.Agent(name="lead", instructions="You lead.", tools=[travel.as_tool("ask_travel", "Ask travel")])
    fake_provider.reply({"tool_calls": [{"name": "ask_travel", "arguments": {"input": QUESTION}}]}, last="lead")
    script(fake_provider)
    fake_provider.reply({"text": "Done."}, last=ANSWER, times=None)
    TOOL_RUNS.clear()
    sink = MemorySink()
    with devtool.record("lead", to=sink):
        agents.Runner.run_sync(lead, "lead: " + QUESTION)
    assert TOOL_RUNS == ["Lisbon"]
    events = sink.events
    asked = next(e for e in events if e["type"] == "tools:execute:start" and e["toolNames"] == ["ask_travel"])
    inner = next(e for e in events if e["type"] == "agent:start" and e["agentId"] == "travel")
    assert inner["trace"]["parentSpanId"] == asked["trace"]["spanId"]
    assert inner["callId"] == "root/agent:lead:0/agent:travel:0"


def test_a_pydantic_ai_agent_delegated_to_from_a_tool_runs_inside_that_call(fake_provider: FakeProvider) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from tests.framework_agents import KEY

    def make() -> Any:
        provider = OpenAIProvider(base_url=fake_provider.openai_base_url, api_key=KEY)
        model = OpenAIChatModel("gpt-4.1-mini", provider=provider)
        travel = Agent(model, name="travel", tools=[weather])

        async def ask_travel(question: str) -> str:
            """Ask the travel agent."""
            return (await travel.run(question)).output

        lead = Agent(model, name="lead", tools=[ask_travel])

        async def main() -> str:
            return (await lead.run("lead: " + QUESTION)).output

        return main

    fake_provider.reply({"tool_calls": [{"name": "ask_travel", "arguments": {"question": QUESTION}}]}, last="lead")
    fake_provider.reply({"text": "Done."}, last=ANSWER, times=None)  # the lead, given the travel agent's answer
    script(fake_provider)
    TOOL_RUNS.clear()
    sink = MemorySink()
    with devtool.record("lead", to=sink):
        assert call(make()) == "Done."
    assert TOOL_RUNS == ["Lisbon"]
    events = sink.events
    asked = next(e for e in events if e["type"] == "tools:execute:start" and e["toolNames"] == ["ask_travel"])
    inner = next(e for e in events if e["type"] == "agent:start" and e["agentId"] == "travel")
    assert inner["trace"]["parentSpanId"] == asked["trace"]["spanId"]
    assert inner["callId"] == "root/agent:lead:0/agent:travel:0"
    # A whole replay serves the delegating call: the agent inside it does not run, nor its tool.
    TOOL_RUNS.clear()
    before = fake_provider.count()
    assert asyncio.run(run_with(make(), snapshot=restore_snapshot(events))) == "Done."
    assert (fake_provider.count() - before, TOOL_RUNS) == (0, [])


MODULE = '''
import devtool
import devtool.instrument
from devtool.core import replayable
from pydantic_ai import Agent

devtool.instrument.install()
RUNS = []


def weather(city: str) -> str:
    """The weather in a city."""
    with open("tool_runs.txt", "a") as runs:
        runs.write(city + "\\n")
    return f"{city}: sunny"


agent = Agent("openai:gpt-4.1-mini", name="travel", tools=[weather])


@replayable
@devtool.record("trip")
def main():
    return agent.run_sync("Plan a day in Lisbon").output
'''


def test_a_sync_entrypoint_records_and_replays_through_devtool_run(
    tmp_path: Path, fake_provider: FakeProvider, store: Store
) -> None:
    (tmp_path / "trip.py").write_text(MODULE)
    script(fake_provider)
    env = {**os.environ, **fake_provider.env(api_key="sk-frameworks-0123456789"), "PYTHONPATH": str(REPO)}

    def devtool_run(*args: str) -> str:
        command = [sys.executable, "-m", "devtool", "run", "trip:main", "--only-replayable", *args]
        done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert orjson.loads(devtool_run("--trace", "first.jsonl")) == ANSWER
    assert (tmp_path / "tool_runs.txt").read_text() == "Lisbon\n"
    first = [orjson.loads(line) for line in (tmp_path / "first.jsonl").read_bytes().splitlines()]
    (tmp_path / "snapshot.json").write_bytes(orjson.dumps(restore_snapshot(first)))
    before = fake_provider.count()
    assert orjson.loads(devtool_run("--snapshot", "snapshot.json", "--trace", "again.jsonl")) == ANSWER
    assert fake_provider.count() == before
    assert (tmp_path / "tool_runs.txt").read_text() == "Lisbon\n"

    left, right = (load_file(store, tmp_path / name).traces[0] for name in ("first.jsonl", "again.jsonl"))
    comparison = compare(store, left, right)
    assert comparison.same, comparison.differences
    calls = {call_id for call_id, _ in comparison.calls or ()}
    assert {"root", "root/agent:travel:0", "root/agent:travel:0/tool:weather:0"} <= calls
    # The replay carries the run's recorded name, on its root span (the runs list names both alike).
    roots = store.query("SELECT name FROM spans WHERE trace_id IN (?, ?) AND kind = 'runWith'", [left, right])
    assert [name for (name,) in roots] == ["trip", "trip"]
    runs = store.query("SELECT name FROM runs WHERE trace_id IN (?, ?)", [left, right])
    assert [name for (name,) in runs] == ["travel", "travel"]


def test_install_imports_no_framework_and_instruments_each_as_it_is_imported() -> None:
    code = (
        "import sys, devtool.instrument\n"
        "names = devtool.instrument.install()\n"
        "frameworks = ('pydantic_ai', 'agents', 'langchain_core', 'langgraph')\n"
        "print(names, [m for m in frameworks if m in sys.modules])\n"
        "import pydantic_ai, agents, langchain_core.tools, langgraph.pregel\n"
        "marks = [pydantic_ai.Agent.iter, agents.Runner.run, langchain_core.tools.BaseTool.run,"
        " langgraph.pregel.Pregel.invoke]\n"
        "print([getattr(f, '__devtool_recorded__', False) for f in marks], pydantic_ai.__spec__.loader is not None)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.splitlines()
    assert first == "['openai', 'anthropic', 'pydantic_ai', 'agents', 'langchain_core'] []"
    assert second == "[True, True, True, True] True"


def test_langgraph_nodes_and_subgraphs_are_frames_inside_their_graph() -> None:
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph

    class State(TypedDict):
        x: int

    inner = StateGraph(State)
    inner.add_node("double", lambda state: {"x": state["x"] * 2})
    inner.add_edge(START, "double")
    inner.add_edge("double", END)
    outer = StateGraph(State)
    outer.add_node("inc", lambda state: {"x": state["x"] + 1})
    outer.add_node("sub", inner.compile(name="doubler"))
    outer.add_edge(START, "inc")
    outer.add_edge("inc", "sub")
    outer.add_edge("sub", END)
    graph = outer.compile(name="pipeline")
    sink = MemorySink()
    with devtool.record("pipeline", to=sink):
        assert graph.invoke({"x": 1}) == {"x": 4}
    starts = [e["callId"] for e in sink.events if e["type"] == "agent:start"]
    assert starts == [
        "root/agent:pipeline:0",
        "root/agent:pipeline:0/agent:inc:0",
        "root/agent:pipeline:0/agent:doubler:0",
        "root/agent:pipeline:0/agent:doubler:0/agent:double:0",
    ]


def test_a_langgraph_tool_call_that_ran_hands_the_graph_the_tools_own_message() -> None:
    """Recorded, a tool call that ran returns the `ToolMessage` the tool made (its metadata with it), not
    one made again from the journaled content (which only a replay needs)."""
    from typing import Annotated

    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.tools import InjectedToolCallId, tool
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode

    ran: list[str] = []

    def forecast(city: str, tool_call_id: str) -> ToolMessage:
        """The forecast for a city."""
        ran.append(city)
        return ToolMessage(f"{city}: sunny", tool_call_id=tool_call_id, response_metadata={"station": 7})

    # As objects, not this module's postponed strings: LangChain reads them to inject the call's id.
    forecast.__annotations__ = {"city": str, "tool_call_id": Annotated[str, InjectedToolCallId], "return": ToolMessage}

    def ask(state: Any) -> dict[str, Any]:
        call = {"name": "forecast", "args": {"city": "Lisbon"}, "id": "call_1", "type": "tool_call"}
        return {"messages": [AIMessage("", tool_calls=[call])]}

    builder = StateGraph(MessagesState)
    builder.add_node("ask", ask)
    builder.add_node("tools", ToolNode([tool(forecast)]))
    builder.add_edge(START, "ask")
    builder.add_edge("ask", "tools")
    builder.add_edge("tools", END)
    graph = builder.compile(name="forecaster")
    sink = MemorySink()
    with devtool.record("forecaster", to=sink):
        answer = graph.invoke({"messages": [("user", "Lisbon?")]})["messages"][-1]
    assert (answer.content, answer.response_metadata, ran) == ("Lisbon: sunny", {"station": 7}, ["Lisbon"])
    (ended,) = [e for e in sink.events if e["type"] == "tools:execute:end"]
    assert [(r["input"], r["output"]) for r in ended["toolResults"]] == [({"city": "Lisbon"}, "Lisbon: sunny")]


STREAMS = [
    ("stream", {}),
    ("stream", {"stream_mode": "updates"}),
    ("stream", {"stream_mode": ["values", "messages"]}),
    ("astream", {"stream_mode": "values"}),
    ("astream", {"stream_mode": "values", "version": "v2"}),
]


@pytest.mark.parametrize(("method", "options"), STREAMS, ids=[f"{m}-{o}" for m, o in STREAMS])
def test_a_langgraph_graph_streamed_directly_is_a_frame_like_invoke(
    method: str, options: dict[str, Any], fake_provider: FakeProvider
) -> None:
    from tests.framework_agents import langgraph_agent

    def make(fake: FakeProvider) -> Any:
        graph = langgraph_agent(fake)
        question = {"messages": [{"role": "user", "content": QUESTION}]}
        if method == "stream":
            return lambda: len(list(graph.stream(question, **options)))

        async def main() -> int:
            return len([chunk async for chunk in graph.astream(question, **options)])

        return main

    program = Program("langgraph-stream", make, (), "")
    script(fake_provider)
    TOOL_RUNS.clear()
    chunks, events = recorded(program, fake_provider)
    assert (fake_provider.count(), TOOL_RUNS) == (2, ["Lisbon"])
    starts = [e["callId"] for e in events if e["type"] == "agent:start"]
    assert starts == [
        "root/agent:travel:0",
        "root/agent:travel:0/agent:model:0",
        "root/agent:travel:0/agent:tools:0",
        "root/agent:travel:0/agent:model:1",
    ]
    (graph_end,) = [e for e in events if e["type"] == "agent:end" and e["callId"] == "root/agent:travel:0"]
    assert graph_end["result"] == ANSWER
    TOOL_RUNS.clear()
    again, asked, replay_events = replayed(program, restore_snapshot(events), fake_provider)
    assert (again, asked, TOOL_RUNS) == (chunks, 0, [])
    assert [e["callId"] for e in replay_events if e["type"] == "agent:start"] == starts
