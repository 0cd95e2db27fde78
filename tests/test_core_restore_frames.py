"""restore_snapshot's frames: nesting of parallel siblings, callIds, and the repair of frames left running."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson

from devtool.core import (
    create_agent,
    create_tool,
    memory,
)
from devtool.core.debugger import dump_snapshot, restore_snapshot
from devtool.core.snapshot import validate
from tests.restore_traces import Trace, frame_at, run_events

# -- nesting and callIds ------------------------------------------------------------------------------


def _parallel_run() -> tuple[list[Any], dict[str, Any]]:
    """Three `worker` siblings run in parallel; each calls a tool twice, so their events interleave."""
    lookup = create_tool("lookup", lambda key: f"{key}!")

    async def worker(props: int) -> int:
        for step in range(2):
            await lookup(key=f"{props}-{step}")
            await asyncio.sleep(0)
            memory()[f"step{step}"] = props
        return props

    async def boss(props: Any) -> list[int]:
        return list(await asyncio.gather(*[create_agent("worker", worker)(n) for n in range(3)]))

    box: dict[str, Any] = {}

    async def main() -> None:
        await create_agent("boss", boss)(None)
        box["dump"] = dump_snapshot()

    return run_events(main), box["dump"]


def _ts_style(events: list[Any]) -> list[Any]:
    """What the TypeScript library would have written: no callIds, whole milliseconds."""
    out = []
    for event in orjson.loads(orjson.dumps(events)):
        event.pop("callId", None)
        event["timestamp"] = int(event["timestamp"])
        for result in event.get("toolResults", []):
            del result["callPath"]
        out.append(event)
    return out


def test_interleaved_parallel_siblings_nest_by_parent_span() -> None:
    events, dump = _parallel_run()
    starts = [i for i, e in enumerate(events) if e["type"] == "agent:start" and e["agentId"] == "worker"]
    first_end = next(i for i, e in enumerate(events) if e["type"] == "agent:end" and e["agentId"] == "worker")
    assert len(starts) == 3
    assert starts[-1] < first_end  # all three run at once: their events interleave
    for restored in (restore_snapshot(events), restore_snapshot(_ts_style(events))):
        boss = frame_at(restored, "root/agent:boss:0")
        expected = frame_at(dump, "root/agent:boss:0")["children"]
        assert list(boss["children"]) == [f"root/agent:boss:0/agent:worker:{n}" for n in range(3)]
        for call_id, child in boss["children"].items():
            assert child["children"] == {}
            assert child["memory"] == expected[call_id]["memory"]
            assert child["journal"] == expected[call_id]["journal"]
            assert (
                child["state"]
                == expected[call_id]["state"]
                == {"status": "completed", "output": child["memory"]["step0"]}
            )


def test_without_parent_spans_interleaved_siblings_would_nest_inside_each_other() -> None:
    # What a restore by stack order alone (the TypeScript library's) makes of the same trace: each
    # worker inside the one started before it. Our fallback does this only when spans are missing.
    events, _ = _parallel_run()
    for event in events:
        if event["type"] != "runWith:start":
            event["trace"]["parentSpanId"] = ""
    boss = frame_at(restore_snapshot(_ts_style(events)), "root/agent:boss:0")
    assert list(boss["children"]) == ["root/agent:boss:0/agent:worker:0"]
    assert list(boss["children"]["root/agent:boss:0/agent:worker:0"]["children"]) == [
        "root/agent:boss:0/agent:worker:0/agent:worker:0"
    ]


def test_sequential_nesting_falls_back_to_stack_order_without_parent_spans() -> None:
    t = Trace()
    t.add("runWith:start", "r")
    t.agent("outer", "s1", "")
    t.agent("inner", "s2", "")
    t.end("inner", "s2", "", memory={"inner": 1})
    t.agent("inner", "s3", "unknown-span")
    t.end("inner", "s3", "")
    t.end("outer", "s1", "")
    outer = frame_at(restore_snapshot(t.events), "root/agent:outer:0")
    assert list(outer["children"]) == ["root/agent:outer:0/agent:inner:0", "root/agent:outer:0/agent:inner:1"]
    assert outer["children"]["root/agent:outer:0/agent:inner:0"]["memory"] == {"inner": 1}


def test_call_ids_count_per_parent_and_agent_id_and_events_call_ids_win() -> None:
    t = Trace()
    t.add("runWith:start", "r")
    t.agent("p", "s1", "r")
    for span, name in [("a1", "x"), ("a2", "y"), ("a3", "x")]:
        t.agent(name, span, "s1-g")
        t.end(name, span, "s1-g")
    t.agent("p", "s2", "r")
    t.agent("x", "b1", "s2-g")
    t.agent("x", "b2", "s2-g", callId="root/agent:p:1/agent:x:7")
    restored = restore_snapshot(t.events)
    assert list(frame_at(restored, "root/agent:p:0")["children"]) == [
        "root/agent:p:0/agent:x:0",
        "root/agent:p:0/agent:y:0",
        "root/agent:p:0/agent:x:1",
    ]
    assert list(frame_at(restored, "root/agent:p:1")["children"]) == [
        "root/agent:p:1/agent:x:0",
        "root/agent:p:1/agent:x:7",
    ]


# -- repair ---------------------------------------------------------------------------------------------


def test_frames_open_at_the_cut_are_running_and_ended_ones_keep_their_outcome() -> None:
    t = Trace()
    t.add("runWith:start", "r")
    t.agent("p", "s1", "r")
    t.agent("ok", "s2", "s1-g")
    t.end("ok", "s2", "s1-g", success=True, result={"v": 1})
    t.agent("bad", "s3", "s1-g")
    t.end("bad", "s3", "s1-g", success=False, error={"name": "RuntimeError", "message": "boom"})
    t.agent("slow", "s4", "s1-g")
    restored = restore_snapshot(t.events)
    assert restored["root"]["state"] == {"status": "running"}
    parent = frame_at(restored, "root/agent:p:0")
    assert parent["state"] == {"status": "running"}
    states = {key.rsplit("/", 1)[1]: child["state"] for key, child in parent["children"].items()}
    assert states == {
        "agent:ok:0": {"status": "completed", "output": {"v": 1}},
        "agent:bad:0": {"status": "failed", "error": {"name": "RuntimeError", "message": "boom"}},
        "agent:slow:0": {"status": "running"},
    }


def test_a_parent_that_ends_first_fails_its_running_children_with_a_message() -> None:
    t = Trace()
    t.add("runWith:start", "r")
    t.agent("parent", "s1", "r")
    t.agent("child", "s2", "s1-g")
    t.agent("grandchild", "s3", "s2-g")
    t.end("parent", "s1", "r", memory={"spawned": 1})
    t.add("turn:end", "t1", "s2-g", agentId="child", success=True, contentHash="late", message={"role": "assistant"})
    t.end(
        "child",
        "s2",
        "s1-g",
        memory={"started": True},
        success=False,
        error={"name": "AbortError", "message": "Cancelled"},
    )
    t.add("runWith:end", "r", success=True, result=None)

    at_parent_end = restore_snapshot(t.events, span_id="s1")
    child = frame_at(at_parent_end, "root/agent:parent:0", "root/agent:parent:0/agent:child:0")
    message = "agent root/agent:parent:0 ended before this agent did (marked failed by restore_snapshot)"
    assert child["state"] == {"status": "failed", "error": {"name": "ParentEnded", "message": message}}
    assert (
        child["children"]["root/agent:parent:0/agent:child:0/agent:grandchild:0"]["state"]["error"]["message"]
        == message
    )
    assert frame_at(at_parent_end, "root/agent:parent:0")["memory"] == {"spawned": 1}
    assert child["memory"] == {}  # never the parent's

    # The child's own end, later, says what really happened to it; its late journal entry is its own.
    latest = frame_at(restore_snapshot(t.events), "root/agent:parent:0", "root/agent:parent:0/agent:child:0")
    assert latest["state"] == {"status": "failed", "error": {"name": "AbortError", "message": "Cancelled"}}
    assert latest["memory"] == {"started": True}
    assert list(latest["journal"]["prompt"]) == ["late"]


def test_a_detached_child_that_starts_after_its_parent_ended_is_failed_until_it_ends() -> None:
    gate = asyncio.Event()
    tasks: list[asyncio.Task[Any]] = []
    lookup = create_tool("lookup", lambda key: key)

    async def child(props: Any) -> str:
        await lookup(key="early")
        await gate.wait()
        return "late"

    async def parent(props: Any) -> str:
        # Not awaited: the child's agent:start comes after the parent's agent:end.
        tasks.append(asyncio.ensure_future(create_agent("child", child)(None)))
        return "returned first"

    async def main() -> None:
        await create_agent("parent", parent)(None)
        await asyncio.sleep(0.01)
        gate.set()
        await tasks[0]

    events = run_events(main)
    types = [e["type"] for e in events]
    assert types.index("agent:end") < [i for i, t in enumerate(types) if t == "agent:start"][1]
    (batch,) = [e for e in events if e["type"] == "tools:execute:end"]
    path = ("root/agent:parent:0", "root/agent:parent:0/agent:child:0")
    meanwhile = frame_at(restore_snapshot(events, span_id=batch["trace"]["spanId"]), *path)
    assert meanwhile["state"] == {
        "status": "failed",
        "error": {
            "name": "ParentEnded",
            "message": "agent root/agent:parent:0 ended before this agent did (marked failed by restore_snapshot)",
        },
    }
    assert len(meanwhile["journal"]["tool"]) == 1  # its calls are its own, for a replay
    assert frame_at(restore_snapshot(events), *path)["state"] == {"status": "completed", "output": "late"}


def test_the_run_ending_first_fails_agents_still_running() -> None:
    t = Trace()
    t.add("runWith:start", "r")
    t.agent("detached", "s1", "r")
    t.add("runWith:end", "r", success=False, error={"name": "Error", "message": "stop"})
    restored = restore_snapshot(t.events)
    assert restored["root"]["state"] == {"status": "failed", "error": {"name": "Error", "message": "stop"}}
    assert frame_at(restored, "root/agent:detached:0")["state"]["error"] == {
        "name": "ParentEnded",
        "message": "the run ended before this agent did (marked failed by restore_snapshot)",
    }


def test_a_failure_without_an_error_still_says_something() -> None:
    t = Trace()
    t.add("runWith:start", "r")
    t.agent("a", "s1", "r")
    t.add("agent:end", "s1", "r", agentId="a", success=False, error={})
    error = frame_at(restore_snapshot(t.events), "root/agent:a:0")["state"]["error"]
    assert error == {"name": "Error", "message": "agent:end reports a failure but no error"}


def test_without_run_with_events_a_synthetic_root_holds_the_agents() -> None:
    t = Trace()
    t.agent("a", "s1", "")
    t.end("a", "s1", "", success=False, error={"name": "E", "message": "no"})
    restored = restore_snapshot(t.events)
    validate(restored)
    root = restored["root"]
    assert (root["callId"], root["agentId"], list(root["children"])) == ("root", "", ["root/agent:a:0"])
    assert root["state"] == {"status": "failed", "error": {"name": "E", "message": "no"}}
    assert restore_snapshot(t.events[:2])["root"]["state"] == {"status": "running"}
