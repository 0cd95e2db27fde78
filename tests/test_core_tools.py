"""Tools: schema checks before the handler, the middleware onion, the journal, tombstones."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from devtool.core import MemorySink, ToolCall, ToolError, create_agent, create_tool, run_with
from devtool.core.debugger import dump_snapshot
from devtool.core.tools import Next

CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def run_agent(handler: Any, **options: Any) -> Any:
    return asyncio.run(run_with(lambda: create_agent("a", handler)(None), **options))


def test_input_is_validated_before_the_handler_runs() -> None:
    ran: list[Any] = []
    weather = create_tool("weather", lambda city: ran.append(city), parameters=CITY)

    async def handler(props: Any) -> Any:
        return await weather(city=42)

    with pytest.raises(ToolError, match=r"tool 'weather': input does not match its parameters: \$.city must be string"):
        run_agent(handler)
    assert ran == []


def test_invalid_parameters_schema_is_refused_at_creation() -> None:
    with pytest.raises(ToolError, match="not a valid JSON schema"):
        create_tool("bad", lambda: None, parameters={"type": "no-such-type"})


def test_sync_and_async_handlers_and_call_ids() -> None:
    async def slow(n: int) -> int:
        await asyncio.sleep(0)
        return n * 2

    double = create_tool("double", slow)
    upper = create_tool("upper", lambda s: s.upper())
    sink = MemorySink()

    async def handler(props: Any) -> Any:
        return [await double(n=1), await upper(s="x"), await double(n=2)]

    assert run_agent(handler, sinks=[sink]) == [2, "X", 4]
    ends = [e for e in sink.events if e["type"] == "tools:execute:end"]
    # Called directly, not asked for by a model: the tool result's callId is ours, as its callPath.
    assert [e["toolResults"][0]["callId"] for e in ends] == [e["toolResults"][0]["callPath"] for e in ends]
    assert [e["toolResults"][0]["callPath"] for e in ends] == [
        "root/agent:a:0/tool:double:0",
        "root/agent:a:0/tool:upper:0",
        "root/agent:a:0/tool:double:1",
    ]
    assert all(e["trace"]["parentSpanId"] for e in ends)


def test_middleware_is_an_onion_and_still_runs_on_a_cache_hit() -> None:
    order: list[str] = []
    handler_runs: list[str] = []

    def layer(name: str) -> Any:
        async def middleware(call: ToolCall, next_: Next) -> Any:
            order.append(f"{name}>")
            result = await next_(call)
            order.append(f"<{name}")
            return result

        return middleware

    def make_tool() -> Any:
        return create_tool(
            "echo", lambda text: handler_runs.append(text) or text, middleware=[layer("outer"), layer("inner")]
        )

    box: dict[str, Any] = {}

    async def record(props: Any) -> Any:
        result = await make_tool()(text="hi")
        box["snapshot"] = dump_snapshot()
        return result

    assert run_agent(record) == "hi"
    assert order == ["outer>", "inner>", "<inner", "<outer"]
    order.clear()

    async def replay(props: Any) -> Any:
        return await make_tool()(text="hi")

    assert run_agent(replay, snapshot=box["snapshot"]) == "hi"
    assert order == ["outer>", "inner>", "<inner", "<outer"]
    assert handler_runs == ["hi"]  # the replay was served by the journal, inside the middleware


def test_repeated_identical_calls_share_one_entry_and_all_replay() -> None:
    runs: list[str] = []
    box: dict[str, Any] = {}

    def make() -> Any:
        return create_tool("search", lambda q: runs.append(q) or {"q": q})

    async def handler(props: Any) -> Any:
        search = make()
        results = [await search(q="x"), await search(q="x"), await search(q="y")]
        box.setdefault("snapshot", dump_snapshot())
        return results

    first = run_agent(handler)
    assert runs == ["x", "x", "y"]  # a live run calls the tool every time
    frame = box["snapshot"]["root"]["children"]["root/agent:a:0"]
    assert len(frame["journal"]["tool"]) == 2
    runs.clear()
    assert run_agent(handler, snapshot=box["snapshot"]) == first
    assert runs == []


def test_non_json_output_is_a_tombstone_and_never_replayed() -> None:
    runs: list[int] = []
    box: dict[str, Any] = {}
    sink = MemorySink()

    def make() -> Any:
        return create_tool("stamp", lambda: runs.append(1) or {"tags": {"a", "b"}})

    async def handler(props: Any) -> Any:
        result = await make()()
        box["snapshot"] = dump_snapshot()
        return sorted(result["tags"])

    assert run_agent(handler, sinks=[sink]) == ["a", "b"]
    (entry,) = box["snapshot"]["root"]["children"]["root/agent:a:0"]["journal"]["tool"].values()
    assert entry["output"] is None
    assert "not replayable: $.tags is a builtins.set" in entry["error"]
    (result,) = next(e for e in sink.events if e["type"] == "tools:execute:end")["toolResults"]
    assert result["tombstone"] is True
    assert "$notJson" in result["output"]

    assert run_agent(handler, snapshot=box["snapshot"]) == ["a", "b"]
    assert runs == [1, 1]  # the tombstone was skipped: the tool ran again


def test_a_failing_handler_is_reported_and_not_journaled() -> None:
    sink = MemorySink()
    box: dict[str, Any] = {}

    def explode() -> None:
        raise ValueError("disk on fire")

    async def handler(props: Any) -> Any:
        try:
            await create_tool("explode", explode)()
        except ValueError:
            box["snapshot"] = dump_snapshot()
        return "survived"

    assert run_agent(handler, sinks=[sink]) == "survived"
    end = next(e for e in sink.events if e["type"] == "tools:execute:end")
    assert end["success"] is False
    assert (end["successCount"], end["failureCount"], end["toolCallsCount"]) == (0, 1, 1)
    assert end["toolNames"] == ["explode"]
    assert end["cache"] is False
    assert end["toolResults"][0]["error"]["message"] == "disk on fire"
    assert box["snapshot"]["root"]["children"]["root/agent:a:0"]["journal"]["tool"] == {}


def test_tool_outside_a_run_says_so() -> None:
    from devtool.core import OutsideRunError

    with pytest.raises(OutsideRunError, match="tool 'x' must be called inside run_with"):
        create_tool("x", lambda: 1)()
