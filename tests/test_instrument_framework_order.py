"""Parallel tool calls of sync and async LangGraph numbered in the model's order, however the framework's
threads or tasks start them: `create_agent` sends each call to a `tools` node run of its own (sync
LangGraph runs them on threads), and a graph's own `ToolNode` runs a state's calls on threads inside one
node run. A user's callback (a slow tracer) or tool wrapper holds the model's first call back until the
others are done, so it starts last; its callId is still the first, in a run and in each replay, and a
cut before the second call runs that call again under the same callId."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.callbacks import AsyncCallbackHandler, BaseCallbackHandler

from devtool.core.debugger import restore_snapshot
from testkit.fake_provider import FakeProvider
from tests.framework_agents import KEY, QUESTION, TOOL_RUNS, Program, weather
from tests.test_instrument_frameworks import recorded, replayed

CITIES = ("Lisbon", "Porto", "Faro")
WAIT = 20.0  # seconds a held call waits at most for the others (a safety net: they end in milliseconds)


def _city(value: Any) -> str | None:
    """The city of the one tool call a node run was sent (its input), if it was sent one."""
    if isinstance(value, dict):
        if value.get("type") == "tool_call":
            return str(value["args"]["city"])
        return next((c for c in map(_city, value.values()) if c), None)
    if isinstance(value, list) and len(value) == 1:
        return _city(value[0])
    return None


class Hold(BaseCallbackHandler):
    """Holds the node run sent the first city until the runs of the other cities ended."""

    def __init__(self) -> None:
        self.ended: set[str] = set()
        self.runs: dict[Any, str] = {}
        self.changed = threading.Condition()

    def on_chain_start(self, serialized: Any, inputs: Any, *, run_id: Any, **kwargs: Any) -> None:
        city = _city(inputs)
        if city is None:
            return
        self.runs[run_id] = city
        if city == CITIES[0]:
            with self.changed:
                self.changed.wait_for(lambda: set(CITIES[1:]) <= self.ended, timeout=WAIT)

    def on_chain_end(self, outputs: Any, *, run_id: Any, **kwargs: Any) -> None:
        with self.changed:
            if run_id in self.runs:
                self.ended.add(self.runs[run_id])
            self.changed.notify_all()


class HoldAsync(AsyncCallbackHandler):
    """`Hold` for `ainvoke`: the first city's task waits for the others'."""

    def __init__(self) -> None:
        self.ended: set[str] = set()
        self.runs: dict[Any, str] = {}
        self.changed = asyncio.Event()

    async def on_chain_start(self, serialized: Any, inputs: Any, *, run_id: Any, **kwargs: Any) -> None:
        city = _city(inputs)
        if city is None:
            return
        self.runs[run_id] = city
        while city == CITIES[0] and not set(CITIES[1:]) <= self.ended:
            self.changed.clear()
            await asyncio.wait_for(self.changed.wait(), WAIT)

    async def on_chain_end(self, outputs: Any, *, run_id: Any, **kwargs: Any) -> None:
        if run_id in self.runs:
            self.ended.add(self.runs[run_id])
        self.changed.set()


def _model(fake: FakeProvider) -> Any:
    import httpx
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        model="gpt-4.1-mini",
        base_url=fake.openai_base_url,
        api_key=KEY,  # type: ignore[arg-type]
        http_async_client=httpx.AsyncClient(),
    )


def agent_sync(fake: FakeProvider) -> Callable[[], Any]:
    from langchain.agents import create_agent
    from langchain_core.tools import tool

    graph = create_agent(_model(fake), tools=[tool(weather)], name="travel")
    question = {"messages": [{"role": "user", "content": QUESTION}]}
    return lambda: graph.invoke(question, {"callbacks": [Hold()]})["messages"][-1].content


def agent_async(fake: FakeProvider) -> Callable[[], Any]:
    from langchain.agents import create_agent
    from langchain_core.tools import tool

    graph = create_agent(_model(fake), tools=[tool(weather)], name="travel")
    question = {"messages": [{"role": "user", "content": QUESTION}]}

    async def main() -> Any:
        return (await graph.ainvoke(question, {"callbacks": [HoldAsync()]}))["messages"][-1].content

    return main


def tool_node_sync(fake: FakeProvider) -> Callable[[], Any]:
    """The LangGraph tutorial's graph: a model node and a `ToolNode` over the state's messages, whose
    tool wrapper (`wrap_tool_call`) holds the first city's call until the others' returned."""
    from langchain_core.tools import tool
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    model = _model(fake).bind_tools([tool(weather)])
    done: set[str] = set()
    changed = threading.Condition()

    def hold(request: Any, execute: Any) -> Any:
        city = request.tool_call["args"]["city"]
        if city == CITIES[0]:
            with changed:
                changed.wait_for(lambda: set(CITIES[1:]) <= done, timeout=WAIT)
        result = execute(request)
        with changed:
            done.add(city)
            changed.notify_all()
        return result

    builder = StateGraph(MessagesState)
    builder.add_node("model", lambda state: {"messages": [model.invoke(state["messages"])]})
    builder.add_node("tools", ToolNode([tool(weather)], wrap_tool_call=hold))
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", tools_condition)
    builder.add_edge("tools", "model")
    graph = builder.compile(name="travel")
    return lambda: graph.invoke({"messages": [{"role": "user", "content": QUESTION}]})["messages"][-1].content


PROGRAMS = [
    Program("create-agent-sync", agent_sync, (), ""),
    Program("create-agent-async", agent_async, (), ""),
    Program("tool-node-sync", tool_node_sync, (), ""),
]


def script(fake: FakeProvider) -> None:
    calls = [{"name": "weather", "arguments": {"city": city}} for city in CITIES]
    fake.reply({"tool_calls": calls}, last=QUESTION, times=None)
    fake.reply({"text": "All sunny."}, last="sunny", times=None)


def numbered(events: list[Any]) -> dict[str, tuple[str, float, float]]:
    """Each city's tool call: its callPath, and when its span started and ended."""
    starts = {e["trace"]["spanId"]: e["timestamp"] for e in events if e["type"] == "tools:execute:start"}
    return {
        r["input"]["city"]: (r["callPath"], starts[e["trace"]["spanId"]], e["timestamp"])
        for e in events
        if e["type"] == "tools:execute:end"
        for r in e["toolResults"]
    }


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_parallel_tool_calls_held_back_number_in_the_models_order(
    program: Program, fake_provider: FakeProvider
) -> None:
    script(fake_provider)
    TOOL_RUNS.clear()
    _, events = recorded(program, fake_provider)
    # The first city ran last (held back), and is numbered first all the same.
    assert TOOL_RUNS[-1] == CITIES[0]
    assert sorted(TOOL_RUNS) == sorted(CITIES)
    assert fake_provider.count() == 2
    calls = numbered(events)
    paths = [calls[city][0] for city in CITIES]
    expected = dict(zip(CITIES, paths, strict=True))
    assert paths == sorted(paths)
    assert len(set(paths)) == len(CITIES)
    assert calls[CITIES[0]][1] > max(calls[city][2] for city in CITIES[1:])

    # Replayed whole, several times: the same callIds, nothing asked, no tool run.
    for _ in range(3):
        TOOL_RUNS.clear()
        again, asked, replay_events = replayed(program, restore_snapshot(events), fake_provider)
        assert (again, asked, TOOL_RUNS) == ("All sunny.", 0, [])
        assert {city: path for city, (path, _, _) in numbered(replay_events).items()} == expected

    # A cut before the second call: it runs again under its callId, with the calls that had not ended by
    # then (the held first one); those that had are served; then the last request is made.
    second = next(e for e in events if e["type"] == "tools:execute:start" and e["callId"] == paths[1])
    pending = sorted(city for city, (_, _, end) in calls.items() if end >= second["timestamp"])
    assert CITIES[1] in pending
    assert CITIES[0] in pending
    TOOL_RUNS.clear()
    snapshot = restore_snapshot(events, span_id=second["trace"]["spanId"], anchor="before")
    again, asked, replay_events = replayed(program, snapshot, fake_provider)
    assert (again, asked, sorted(TOOL_RUNS)) == ("All sunny.", 1, pending)
    assert {city: path for city, (path, _, _) in numbered(replay_events).items()} == expected
