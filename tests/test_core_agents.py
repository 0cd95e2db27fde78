"""Agents: child frames, callIds in call order, nesting to any depth, failures, memory."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from devtool.core import MemorySink, OutsideRunError, create_agent, current_trace_id, memory, run_with


def call_ids(sink: MemorySink, kind: str = "agent:start") -> list[str]:
    return [e["callId"] for e in sink.events if e["type"] == kind]


def test_call_ids_count_per_parent_and_agent_id_in_call_order() -> None:
    leaf = create_agent("leaf", lambda props: props)

    async def middle(props: Any) -> Any:
        return [await leaf(1), await leaf(2)]

    mid = create_agent("mid", middle)

    async def top(props: Any) -> Any:
        return [await mid(None), await leaf(0), await mid(None)]

    sink = MemorySink()
    asyncio.run(run_with(lambda: create_agent("top", top)(None), sinks=[sink]))
    assert call_ids(sink) == [
        "root/agent:top:0",
        "root/agent:top:0/agent:mid:0",
        "root/agent:top:0/agent:mid:0/agent:leaf:0",
        "root/agent:top:0/agent:mid:0/agent:leaf:1",
        "root/agent:top:0/agent:leaf:0",
        "root/agent:top:0/agent:mid:1",
        "root/agent:top:0/agent:mid:1/agent:leaf:0",
        "root/agent:top:0/agent:mid:1/agent:leaf:1",
    ]


def test_parallel_children_started_together_are_numbered_in_list_order() -> None:
    # Finish in reverse order, each worker waiting for the next one to end (not on timers, which a
    # loaded machine reorders): numbering must not depend on completion.
    finished: dict[int, asyncio.Event] = {}

    async def work(props: dict[str, Any]) -> Any:
        i = props["i"]
        if i < 4:
            await finished[i + 1].wait()
        memory()["i"] = i
        finished[i].set()
        return i

    worker = create_agent("worker", work)

    async def fan_out(props: Any) -> Any:
        finished.update({i: asyncio.Event() for i in range(5)})
        return await asyncio.gather(*[worker({"i": i}) for i in range(5)])

    sink = MemorySink()
    assert asyncio.run(run_with(lambda: create_agent("boss", fan_out)(None), sinks=[sink])) == [0, 1, 2, 3, 4]
    starts = {
        e["callId"]: e["props"]["i"] for e in sink.events if e["type"] == "agent:start" and e["agentId"] == "worker"
    }
    assert starts == {f"root/agent:boss:0/agent:worker:{i}": i for i in range(5)}
    ends = [e["callId"] for e in sink.events if e["type"] == "agent:end" and e["agentId"] == "worker"]
    assert ends == [f"root/agent:boss:0/agent:worker:{i}" for i in reversed(range(5))]


def test_spans_nest_under_the_parent_generation() -> None:
    child = create_agent("child", lambda props: None)

    async def parent(props: Any) -> None:
        await child(None)

    sink = MemorySink()
    asyncio.run(run_with(lambda: create_agent("parent", parent)(None), sinks=[sink]))
    by_type = {(e["type"], e["agentId"]): e for e in sink.events}
    run_span = by_type[("runWith:start", "")]["trace"]["spanId"]
    parent_start = by_type[("agent:start", "parent")]
    generation = by_type[("generation:start", "parent")]
    assert parent_start["trace"]["parentSpanId"] == run_span
    assert generation["trace"]["parentSpanId"] == parent_start["trace"]["spanId"]
    assert by_type[("agent:start", "child")]["trace"]["parentSpanId"] == generation["trace"]["spanId"]
    assert len({e["trace"]["traceId"] for e in sink.events}) == 1


def test_a_failing_agent_reports_and_raises_to_its_caller() -> None:
    async def bad(props: Any) -> None:
        raise KeyError("missing")

    failing = create_agent("bad", bad)

    async def parent(props: Any) -> str:
        try:
            await failing(None)
        except KeyError:
            return "caught"
        return "not reached"

    sink = MemorySink()
    assert asyncio.run(run_with(lambda: create_agent("p", parent)(None), sinks=[sink])) == "caught"
    end = next(e for e in sink.events if e["type"] == "agent:end" and e["agentId"] == "bad")
    assert end["success"] is False
    assert end["error"]["name"] == "KeyError"
    assert "raise KeyError" in end["error"]["stack"]
    (error,) = [e for e in sink.events if e["type"] == "error"]
    assert error["callId"] == "root/agent:p:0/agent:bad:0"
    assert error["error"]["message"] == "'missing'"


HEAD = ["schemaVersion", "type", "timestamp", "agentId", "trace", "callId"]


def test_a_frames_events_carry_the_typescript_librarys_agent_fields_in_wire_order() -> None:
    async def ok(props: Any) -> Any:
        memory()["seen"] = props
        return {"n": props}

    async def bad(props: Any) -> None:
        raise KeyError("missing")

    async def parent(props: Any) -> Any:
        with pytest.raises(KeyError):
            await create_agent("bad", bad)(2)
        return await create_agent("ok", ok)(1)

    sink = MemorySink()
    asyncio.run(run_with(lambda: create_agent("p", parent)(None), sinks=[sink]))
    events = {(e["agentId"], e["type"]): e for e in sink.events}
    start, opened = events["ok", "agent:start"], events["ok", "generation:start"]
    assert list(start) == [*HEAD, "props", "scopeLayers", "resourceKeys", "maxReborns"]
    assert (start["props"], start["scopeLayers"], start["resourceKeys"], start["maxReborns"]) == (1, [], [], 0)
    assert list(opened) == [*HEAD, "generationId", "props"]
    closed, end = events["ok", "generation:end"], events["ok", "agent:end"]
    outcome = ["success", "result"]
    assert list(closed) == [*HEAD, "generationId", "props", "memory", "endReason", "draft", "duration", *outcome]
    assert (closed["memory"], closed["endReason"], closed["result"]) == ({"seen": 1}, "return", {"n": 1})
    assert closed["draft"] == {
        "systemPrompts": [],
        "instructions": [],
        "tools": [],
        "scopeLayers": [],
        "resourceKeys": [],
    }
    ends = [*HEAD, "props", "duration", "generationCount", "scopeLayers", "resourceKeys", "maxReborns", *outcome]
    assert list(end) == ends
    assert (end["generationCount"], end["success"], end["result"]) == (1, True, {"n": 1})
    failed, ended = events["bad", "generation:end"], events["bad", "agent:end"]
    assert (failed["memory"], failed["endReason"], failed["success"]) == ({}, "error", False)
    assert list(ended)[-2:] == ["success", "error"]
    assert ended["error"] is failed["error"]
    assert ended["error"]["message"] == "'missing'"


def test_an_error_passing_through_several_frames_is_one_error_event() -> None:
    async def deepest(props: Any) -> None:
        raise RuntimeError("deep")

    async def middle(props: Any) -> None:
        await create_agent("deepest", deepest)(None)

    sink = MemorySink()
    with pytest.raises(RuntimeError):
        asyncio.run(run_with(lambda: create_agent("top", middle)(None), sinks=[sink]))
    assert [e["callId"] for e in sink.events if e["type"] == "error"] == ["root/agent:top:0/agent:deepest:0"]
    failed = [e["callId"] for e in sink.events if e["type"] == "agent:end" and not e["success"]]
    assert failed == ["root/agent:top:0/agent:deepest:0", "root/agent:top:0"]


def test_memory_holds_json_only_and_belongs_to_the_frame() -> None:
    seen: dict[str, Any] = {}

    async def child(props: Any) -> None:
        memory()["mine"] = 1
        seen["child"] = dict(memory())

    async def parent(props: Any) -> None:
        memory()["shared?"] = "no"
        await create_agent("child", child)(None)
        seen["parent"] = dict(memory())
        with pytest.raises(TypeError, match=r"memory\['when'\] is a builtins.object"):
            memory()["when"] = object()

    asyncio.run(run_with(lambda: create_agent("parent", parent)(None)))
    assert seen == {"child": {"mine": 1}, "parent": {"shared?": "no"}}


def test_an_agent_called_outside_run_with_gets_a_default_run() -> None:
    async def handler(props: Any) -> str:
        return current_trace_id()

    trace_id = asyncio.run(create_agent("solo", handler)(None))
    assert len(trace_id) == 32
    assert int(trace_id, 16) >= 0


def test_memory_outside_a_run_is_a_clear_error() -> None:
    with pytest.raises(OutsideRunError, match=r"memory\(\) must be called inside run_with\(\) or an agent"):
        memory()
