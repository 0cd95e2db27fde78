"""`@devtool.agent` and `@devtool.tool`: frames and journaled tool calls from plain functions, sync and
async, numbered the same in a run and its replay, across gather and threads."""

from __future__ import annotations

import asyncio
import contextvars
import inspect
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pydantic
import pytest

import devtool
from devtool.core import MemorySink, run_with
from devtool.core.debugger import dump_snapshot

RAN: list[str] = []


@devtool.tool
def charge(order_id: str, cents: int = 100) -> dict[str, Any]:
    """Charge an order (a side effect a replay must not repeat)."""
    RAN.append(f"charge {order_id}")
    return {"order": order_id, "charged": cents}


@devtool.tool(name="lookup", exclude=("ctx",))
async def find(ctx: object, query: str) -> list[str]:
    RAN.append(f"lookup {query}")
    await asyncio.sleep(0)
    return [query.upper()]


@devtool.agent
async def fetcher(topic: str) -> list[str]:
    return await find(object(), topic)


@devtool.agent(name="billing")
def bill(order_id: str) -> dict[str, Any]:
    return charge(order_id)


class Order(pydantic.BaseModel):
    id: str


@devtool.tool
def ship(order: Order) -> str:
    RAN.append(f"ship {order.id}")
    return f"shipped {order.id}"


def ends(sink: MemorySink) -> list[dict[str, Any]]:
    return [dict(e) for e in sink.events if e["type"] in ("agent:end", "tools:execute:end")]


def test_decorated_functions_keep_what_frameworks_read() -> None:
    assert inspect.iscoroutinefunction(find)
    assert not inspect.iscoroutinefunction(charge)
    assert charge.__name__ == "charge"
    assert charge.__doc__ is not None
    assert list(inspect.signature(find).parameters) == ["ctx", "query"]
    assert charge("outside") == {"order": "outside", "charged": 100}  # outside a run: the plain function


def test_agents_and_tools_record_and_a_replay_skips_the_side_effects() -> None:
    async def main() -> Any:
        found = await asyncio.gather(*(fetcher(topic) for topic in ("a", "b", "c")))
        billed = await asyncio.to_thread(bill, "o-1")
        shipped = ship(Order(id="o-1"))
        return found, billed, shipped, dump_snapshot()

    RAN.clear()
    first = MemorySink()
    *result, snapshot = asyncio.run(run_with(main, sinks=[first]))
    assert result == [[["A"], ["B"], ["C"]], {"order": "o-1", "charged": 100}, "shipped o-1"]
    assert sorted(RAN) == ["charge o-1", "lookup a", "lookup b", "lookup c", "ship o-1"]
    agents = [e["callId"] for e in ends(first) if e["type"] == "agent:end"]
    assert sorted(agents) == [
        "root/agent:billing:0",
        "root/agent:fetcher:0",
        "root/agent:fetcher:1",
        "root/agent:fetcher:2",
    ]
    fetched = {
        e["props"]["topic"]: e["callId"] for e in ends(first) if e["type"] == "agent:end" and "topic" in e["props"]
    }
    assert fetched == {"a": "root/agent:fetcher:0", "b": "root/agent:fetcher:1", "c": "root/agent:fetcher:2"}
    lookups = [e["toolResults"][0] for e in ends(first) if e.get("toolNames") == ["lookup"]]
    assert {r["input"]["query"] for r in lookups} == {"a", "b", "c"}
    assert all("ctx" not in r["input"] for r in lookups)
    (shipped,) = [e["toolResults"][0] for e in ends(first) if e.get("toolNames") == ["ship"]]
    assert shipped["input"] == {"order": {"id": "o-1"}}
    (charged,) = [e for e in ends(first) if e.get("toolNames") == ["charge"]]
    assert charged["callId"] == "root/agent:billing:0/tool:charge:0"  # in the thread, still in its frame

    RAN.clear()
    again = MemorySink()
    *replayed, _ = asyncio.run(run_with(main, sinks=[again], snapshot=snapshot))
    assert replayed == result
    assert RAN == []
    assert all(e["cache"] for e in ends(again) if e["type"] == "tools:execute:end")


def test_a_thread_pool_keeps_the_run_when_handed_its_context() -> None:
    def main() -> Any:
        with ThreadPoolExecutor(2) as pool:
            futures = [pool.submit(contextvars.copy_context().run, charge, f"o-{n}") for n in range(3)]
            plain = pool.submit(charge, "not-recorded")
            return [f.result() for f in futures], plain.result()

    sink = MemorySink()
    asyncio.run(run_with(main, sinks=[sink]))
    ids = sorted(e["callId"] for e in ends(sink))
    assert ids == ["root/tool:charge:0", "root/tool:charge:1", "root/tool:charge:2"]


def test_a_failing_tool_and_agent_are_recorded_as_failed() -> None:
    @devtool.tool
    def broken() -> None:
        raise ValueError("no stock")

    @devtool.agent
    def shop() -> None:
        broken()

    sink = MemorySink()

    async def main() -> None:
        shop()

    with pytest.raises(ValueError, match="no stock"):
        asyncio.run(run_with(main, sinks=[sink]))
    (tool_end,) = [e for e in ends(sink) if e["type"] == "tools:execute:end"]
    assert tool_end["toolResults"][0]["error"]["message"] == "no stock"
    (agent_end,) = [e for e in ends(sink) if e["type"] == "agent:end"]
    assert agent_end["success"] is False
