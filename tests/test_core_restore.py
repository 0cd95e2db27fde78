"""restore_snapshot: the cut, frames, journals, nesting, callIds, repair, provenance, bad input, errors."""

from __future__ import annotations

import asyncio
import itertools
import random
from pathlib import Path
from typing import Any

import orjson
import pytest

from devtool.core import (
    JsonlSink,
    MemorySink,
    RestoreError,
    ScriptedModel,
    create_agent,
    create_tool,
    memory,
    prompt,
    run_with,
)
from devtool.core.debugger import dump_snapshot, restore_snapshot
from devtool.core.restore import RestoreWarning
from devtool.core.snapshot import validate

TRACE = "a" * 32


class Trace:
    """Hand-written events of one run, one millisecond apart unless told."""

    def __init__(self, trace_id: str = TRACE) -> None:
        self.trace_id = trace_id
        self.events: list[dict[str, Any]] = []
        self.clock = itertools.count(1_000)

    def add(self, type_: str, span: str, parent: str = "", *, at: int | None = None, **fields: Any) -> dict[str, Any]:
        event = {
            "schemaVersion": 1,
            "type": type_,
            "timestamp": next(self.clock) if at is None else at,
            "agentId": fields.pop("agentId", ""),
            "trace": {"traceId": self.trace_id, "spanId": span, "parentSpanId": parent},
            **fields,
        }
        self.events.append(event)
        return event

    def agent(self, agent_id: str, span: str, parent: str, **fields: Any) -> None:
        """agent:start and generation:start (span `span + "-g"`), as both libraries emit them."""
        self.add("agent:start", span, parent, agentId=agent_id, **fields)
        self.add("generation:start", f"{span}-g", span, agentId=agent_id, generationId=0)

    def end(self, agent_id: str, span: str, parent: str, *, memory: Any = None, **outcome: Any) -> None:
        outcome = outcome or {"success": True, "result": f"{agent_id} done"}
        self.add("generation:end", f"{span}-g", span, agentId=agent_id, memory=memory or {}, **outcome)
        self.add("agent:end", span, parent, agentId=agent_id, **outcome)


def _frame(snapshot: dict[str, Any], *path: str) -> dict[str, Any]:
    frame = snapshot["root"]
    for call_id in path:
        frame = frame["children"][call_id]
    return frame


def _run_events(fn: Any, **kwargs: Any) -> list[Any]:
    sink = MemorySink()
    asyncio.run(run_with(fn, sinks=[sink], **kwargs))
    return sink.events


# -- the cut ----------------------------------------------------------------------------------------


def test_events_in_any_order_restore_as_sorted_by_timestamp() -> None:
    t = Trace()
    t.add("runWith:start", "r")
    t.agent("a", "s1", "r")
    t.add("turn:end", "t1", "s1-g", agentId="a", success=True, contentHash="h1", message={"role": "assistant"})
    t.end("a", "s1", "r", memory={"m": 1})
    t.add("runWith:end", "r", success=True, result=1)
    shuffled = t.events[:]
    random.Random(4).shuffle(shuffled)
    assert restore_snapshot(shuffled) == restore_snapshot(t.events)
    assert _frame(restore_snapshot(shuffled), "root/agent:a:0")["memory"] == {"m": 1}


def test_equal_timestamps_keep_list_order() -> None:
    # The TypeScript library stamps whole milliseconds: siblings started in one ms keep file order.
    t = Trace()
    t.add("runWith:start", "r", at=5)
    for name, span in [("w", "s1"), ("w", "s2"), ("v", "s3"), ("w", "s4")]:
        t.add("agent:start", span, "r", at=5, agentId=name, props={"span": span})
    restored = restore_snapshot(t.events)
    assert {key: child["agentId"] for key, child in restored["root"]["children"].items()} == {
        "root/agent:w:0": "w",
        "root/agent:w:1": "w",
        "root/agent:v:0": "v",
        "root/agent:w:2": "w",
    }


def test_after_keeps_the_span_end_and_before_drops_the_span_start() -> None:
    t = Trace()
    t.add("runWith:start", "r")
    t.agent("a", "s1", "r")
    t.add("tools:execute:start", "tb", "s1-g", agentId="a")
    results = [{"callId": "c", "toolName": "lookup", "success": True, "contentHash": "k", "output": 7}]
    t.add("tools:execute:end", "tb", "s1-g", agentId="a", toolResults=results, success=True)
    t.add("tools:execute:start", "tc", "s1-g", agentId="a")
    after = _frame(restore_snapshot(t.events, span_id="tb", anchor="after"), "root/agent:a:0")
    assert after["journal"]["tool"] == {"k": {"output": 7, "contentHash": "k"}}
    assert after["state"] == {"status": "running"}
    before = _frame(restore_snapshot(t.events, span_id="tb", anchor="before"), "root/agent:a:0")
    assert before["journal"]["tool"] == {}
    assert restore_snapshot(t.events, span_id="tb")["provenance"]["anchor"] == "after"  # the default


def test_provenance_and_identity_of_the_snapshot() -> None:
    t = Trace()
    t.add("runWith:start", "r")
    t.agent("a", "s1", "r")
    cut = t.add("tools:execute:start", "tb", "s1-g", agentId="a")
    t.add("tools:execute:end", "tb", "s1-g", agentId="a", toolResults=[], success=True)
    latest = restore_snapshot(t.events)
    assert latest["provenance"] == {"traceId": TRACE, "spanId": "tb", "anchor": "after", "source": "restore"}
    before = restore_snapshot(t.events, span_id="tb", anchor="before")
    assert before["provenance"] == {"traceId": TRACE, "spanId": "tb", "anchor": "before", "source": "restore"}
    # A pure function of its arguments: the run's id, the moment of the cut (the span's start, for before).
    assert before["processId"] == TRACE
    assert before["timestamp"] == cut["timestamp"]
    assert latest["timestamp"] == t.events[-1]["timestamp"]
    assert latest["version"] == 1
    assert restore_snapshot(t.events, span_id="") == latest  # an empty span id means none


def test_only_the_run_of_the_cut_is_restored() -> None:
    first, second = Trace("1" * 32), Trace("2" * 32)
    for t, name in [(first, "one"), (second, "two")]:
        t.add("runWith:start", f"r-{name}")
        t.agent(name, f"s-{name}", f"r-{name}")
        t.end(name, f"s-{name}", f"r-{name}")
        t.add("runWith:end", f"r-{name}", success=True, result=name)
    # Two runs appended to one file by JsonlSink, the second later in time.
    for event in second.events:
        event["timestamp"] += 100
    events = first.events + second.events
    assert list(restore_snapshot(events)["root"]["children"]) == ["root/agent:two:0"]
    earlier = restore_snapshot(events, span_id="s-one")
    assert list(earlier["root"]["children"]) == ["root/agent:one:0"]
    assert earlier["provenance"]["traceId"] == "1" * 32
    # Before the second run's first event: nothing of that run exists yet.
    with pytest.raises(RestoreError, match="START event is at the beginning of trace"):
        restore_snapshot(events, span_id="r-two", anchor="before")


# -- journals and memory ------------------------------------------------------------------------------


def test_prompt_journal_takes_successful_turns_with_a_hash_and_a_message() -> None:
    t = Trace()
    t.add("runWith:start", "r")
    t.agent("a", "s1", "r")
    t.add("promptAgent:start", "p", "s1-g", agentId="a")
    message = {"role": "assistant", "content": "hi"}
    t.add("turn:end", "t1", "p", agentId="a", success=True, contentHash="ok", message=message, cache=False)
    t.add("turn:end", "t2", "p", agentId="a", success=True, contentHash="cached", message=message, cache=True)
    t.add("turn:end", "t3", "p", agentId="a", success=False, contentHash="failed", error={"name": "E", "message": "x"})
    t.add("turn:end", "t4", "p", agentId="a", success=True, contentHash=None, message=message)
    t.add("turn:end", "t5", "p", agentId="a", success=True, contentHash="no-message")
    journal = _frame(restore_snapshot(t.events), "root/agent:a:0")["journal"]
    assert journal["prompt"] == {
        "ok": {"output": message, "contentHash": "ok"},
        "cached": {"output": message, "contentHash": "cached"},
    }


def test_failed_results_of_a_batch_are_skipped_and_the_rest_kept() -> None:
    t = Trace()
    t.add("runWith:start", "r")
    t.agent("a", "s1", "r")
    t.add("tools:execute:start", "tb", "s1-g", agentId="a")
    results = [
        {"callId": "c1", "toolName": "lookup", "success": True, "contentHash": "h1", "output": {"v": 1}},
        {"callId": "c2", "toolName": "lookup", "success": False, "contentHash": "h2", "error": {"message": "down"}},
        {"callId": "c3", "toolName": "lookup", "success": True, "contentHash": "h3", "output": None, "cache": True},
        {"callId": "c4", "toolName": "gone", "success": False, "contentHash": None},
    ]
    t.add("tools:execute:end", "tb", "s1-g", agentId="a", toolResults=results, success=False)
    tools = _frame(restore_snapshot(t.events), "root/agent:a:0")["journal"]["tool"]
    assert tools == {"h1": {"output": {"v": 1}, "contentHash": "h1"}, "h3": {"output": None, "contentHash": "h3"}}


def test_a_tool_output_that_is_not_json_restores_as_a_tombstone_and_runs_again() -> None:
    runs: list[str] = []

    def opaque(key: str) -> object:
        runs.append(key)
        return {key}  # a set: not JSON

    tool = create_tool("opaque", opaque)

    async def handler(props: Any) -> None:
        await tool(key="k")

    box: dict[str, Any] = {}
    agent = create_agent("a", handler)

    async def main() -> None:
        await agent(None)
        box["dump"] = dump_snapshot()

    events = _run_events(main)
    restored = restore_snapshot(events)
    (entry,) = _frame(restored, "root/agent:a:0")["journal"]["tool"].values()
    assert entry["output"] is None
    assert entry["error"].startswith("not replayable: $ is a builtins.set")
    assert entry == next(iter(_frame(box["dump"], "root/agent:a:0")["journal"]["tool"].values()))
    asyncio.run(run_with(lambda: agent(None), snapshot=restored))
    assert runs == ["k", "k"]  # never replayed


def test_memory_comes_from_generation_end_and_the_root_memory_from_run_with_end() -> None:
    async def child(props: Any) -> None:
        memory()["seen"] = props

    async def main() -> None:
        memory()["root"] = True
        await create_agent("c", child)(1)
        await create_agent("c", child)(2)

    restored = restore_snapshot(_run_events(main))
    assert restored["root"]["memory"] == {"root": True}
    assert [c["memory"] for c in restored["root"]["children"].values()] == [{"seen": 1}, {"seen": 2}]


def test_a_running_frame_has_no_memory_until_its_generation_ends() -> None:
    t = Trace()
    t.add("runWith:start", "r")
    t.agent("a", "s1", "r")
    t.add("tools:execute:start", "tb", "s1-g", agentId="a")
    t.add("tools:execute:end", "tb", "s1-g", agentId="a", toolResults=[], success=True)
    t.end("a", "s1", "r", memory={"done": True})
    assert _frame(restore_snapshot(t.events, span_id="tb"), "root/agent:a:0")["memory"] == {}
    assert _frame(restore_snapshot(t.events), "root/agent:a:0")["memory"] == {"done": True}


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

    return _run_events(main), box["dump"]


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
        boss = _frame(restored, "root/agent:boss:0")
        expected = _frame(dump, "root/agent:boss:0")["children"]
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
    boss = _frame(restore_snapshot(_ts_style(events)), "root/agent:boss:0")
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
    outer = _frame(restore_snapshot(t.events), "root/agent:outer:0")
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
    assert list(_frame(restored, "root/agent:p:0")["children"]) == [
        "root/agent:p:0/agent:x:0",
        "root/agent:p:0/agent:y:0",
        "root/agent:p:0/agent:x:1",
    ]
    assert list(_frame(restored, "root/agent:p:1")["children"]) == [
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
    parent = _frame(restored, "root/agent:p:0")
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
    child = _frame(at_parent_end, "root/agent:parent:0", "root/agent:parent:0/agent:child:0")
    message = "agent root/agent:parent:0 ended before this agent did (marked failed by restore_snapshot)"
    assert child["state"] == {"status": "failed", "error": {"name": "ParentEnded", "message": message}}
    assert (
        child["children"]["root/agent:parent:0/agent:child:0/agent:grandchild:0"]["state"]["error"]["message"]
        == message
    )
    assert _frame(at_parent_end, "root/agent:parent:0")["memory"] == {"spawned": 1}
    assert child["memory"] == {}  # never the parent's

    # The child's own end, later, says what really happened to it; its late journal entry is its own.
    latest = _frame(restore_snapshot(t.events), "root/agent:parent:0", "root/agent:parent:0/agent:child:0")
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

    events = _run_events(main)
    types = [e["type"] for e in events]
    assert types.index("agent:end") < [i for i, t in enumerate(types) if t == "agent:start"][1]
    (batch,) = [e for e in events if e["type"] == "tools:execute:end"]
    path = ("root/agent:parent:0", "root/agent:parent:0/agent:child:0")
    meanwhile = _frame(restore_snapshot(events, span_id=batch["trace"]["spanId"]), *path)
    assert meanwhile["state"] == {
        "status": "failed",
        "error": {
            "name": "ParentEnded",
            "message": "agent root/agent:parent:0 ended before this agent did (marked failed by restore_snapshot)",
        },
    }
    assert len(meanwhile["journal"]["tool"]) == 1  # its calls are its own, for a replay
    assert _frame(restore_snapshot(events), *path)["state"] == {"status": "completed", "output": "late"}


def test_the_run_ending_first_fails_agents_still_running() -> None:
    t = Trace()
    t.add("runWith:start", "r")
    t.agent("detached", "s1", "r")
    t.add("runWith:end", "r", success=False, error={"name": "Error", "message": "stop"})
    restored = restore_snapshot(t.events)
    assert restored["root"]["state"] == {"status": "failed", "error": {"name": "Error", "message": "stop"}}
    assert _frame(restored, "root/agent:detached:0")["state"]["error"] == {
        "name": "ParentEnded",
        "message": "the run ended before this agent did (marked failed by restore_snapshot)",
    }


def test_a_failure_without_an_error_still_says_something() -> None:
    t = Trace()
    t.add("runWith:start", "r")
    t.agent("a", "s1", "r")
    t.add("agent:end", "s1", "r", agentId="a", success=False, error={})
    error = _frame(restore_snapshot(t.events), "root/agent:a:0")["state"]["error"]
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


# -- our own traces, from a file ------------------------------------------------------------------


def test_a_trace_file_written_by_jsonl_sink_restores_like_the_events_in_memory(tmp_path: Path) -> None:
    model = ScriptedModel(["first", "second"])

    async def handler(props: Any) -> str:
        memory()["answers"] = [await prompt("one"), await prompt("two")]
        return "done"

    path = tmp_path / "run.jsonl"
    sink = MemorySink()
    with JsonlSink(path) as file_sink:
        asyncio.run(run_with(lambda: create_agent("a", handler, model=model)(None), sinks=[sink, file_sink]))
    from_file = restore_snapshot([orjson.loads(line) for line in path.read_bytes().splitlines()])
    assert from_file == restore_snapshot(sink.events)
    frame = _frame(from_file, "root/agent:a:0")
    assert frame["memory"] == {"answers": ["first", "second"]}
    assert [entry["output"]["content"] for entry in frame["journal"]["prompt"].values()] == ["first", "second"]
    replay_model = ScriptedModel([])
    agent = create_agent("a", handler, model=replay_model)
    assert asyncio.run(run_with(lambda: agent(None), snapshot=from_file)) == "done"
    assert replay_model.calls == 0


# -- bad events -------------------------------------------------------------------------------------


def test_malformed_events_are_skipped_and_counted_in_one_warning() -> None:
    t = Trace()
    t.add("runWith:start", "r")
    t.agent("a", "s1", "r")
    t.end("a", "s1", "r", memory={"m": 1})
    clean = restore_snapshot(t.events)
    noisy = [
        *t.events[:2],
        "not an event",
        {"schemaVersion": 1, "type": "agent:start", "timestamp": "soon"},
        {"schemaVersion": 1, "type": "agent:start", "timestamp": 1_001.5, "agentId": "ghost"},
        {"schemaVersion": 1, "type": "agent:start", "timestamp": 1_001.5, "trace": "r"},
        {"type": "agent:start", "timestamp": 1_001.5, "trace": {"traceId": TRACE, "spanId": "z", "parentSpanId": ""}},
        {"schemaVersion": 1, "type": "mystery:thing", "timestamp": 1_002, "trace": {"traceId": TRACE, "spanId": "q"}},
        {
            "schemaVersion": 1,
            "type": "tools:execute:end",
            "timestamp": 1_002,
            "trace": {"traceId": TRACE, "spanId": "u"},
        },
        *t.events[2:],
    ]
    with pytest.warns(RestoreWarning) as caught:
        restored = restore_snapshot(noisy)
    assert restored == clean
    (warning,) = caught
    message = str(warning.message)
    assert message.startswith("restore_snapshot skipped 7 malformed events: ")
    for part in [
        "1 that are not objects (first: item 2)",
        "1 without a numeric timestamp (first: item 3)",
        "2 without a trace context (trace.spanId) or a type (first: type 'agent:start' at timestamp 1001.5)",
        "1 without a schemaVersion number",
        "1 of unknown type 'mystery:thing'",
        "1 without a toolResults list",
    ]:
        assert part in message


def test_an_unknown_span_still_parents_what_starts_inside_it() -> None:
    t = Trace()
    t.add("runWith:start", "r")
    t.agent("a", "s1", "r")
    t.add("custom:step:start", "c", "s1-g", agentId="a")
    t.agent("b", "s2", "c")
    with pytest.warns(RestoreWarning, match="1 of unknown type 'custom:step:start'"):
        restored = restore_snapshot(t.events)
    assert list(_frame(restored, "root/agent:a:0")["children"]) == ["root/agent:a:0/agent:b:0"]


# -- errors -----------------------------------------------------------------------------------------


def _simple() -> Trace:
    t = Trace()
    t.add("runWith:start", "r")
    t.agent("a", "s1", "r")
    t.add("tools:execute:start", "open", "s1-g", agentId="a")
    t.add("validation:failure", "point", "s1-g", agentId="a")
    t.end("a", "s1", "r")
    t.add("runWith:end", "r", success=True, result=None)
    return t


@pytest.mark.parametrize(
    ("events", "options", "message"),
    [
        ([], {}, "Restore failed: Trace is empty."),
        ([], {"span_id": "span_nope"}, "Restore failed: Trace is empty."),
        (
            _simple().events,
            {"span_id": "nope"},
            'Restore failed: Target span "nope" END event not found in trace: no event has this span id.',
        ),
        (
            _simple().events,
            {"span_id": "nope", "anchor": "before"},
            'Restore failed: Target span "nope" START event not found in trace: no event has this span id.',
        ),
        (
            _simple().events,
            {"span_id": "open"},
            'Restore failed: Target span "open" END event not found in trace: the span started (tools:execute:start) '
            "but its end is not in the trace (it was still running when the trace stops); restore it with "
            'anchor="before", or without span_id for the latest state.',
        ),
        (
            _simple().events,
            {"span_id": "point", "anchor": "before"},
            'Restore failed: Target span "point" START event not found in trace: its events (validation:failure) '
            "have no start.",
        ),
        (
            _simple().events,
            {"span_id": "r", "anchor": "before"},
            'Restore failed: Target span "r" START event is at the beginning of trace, cannot restore before it.',
        ),
        (
            _simple().events,
            {"span_id": "s1", "anchor": "before"},
            "Restore failed: Root agent frame not created: no agent had started at this cut, so there is nothing "
            "to restore (to retry the whole run, run it again without a snapshot).",
        ),
        (_simple().events, {"anchor": "later"}, 'Restore failed: anchor must be "before" or "after", got \'later\'.'),
        (_simple().events, {"span_id": 7}, "Restore failed: span_id must be a string, got int."),
    ],
    ids=[
        "empty",
        "empty-with-span",
        "unknown-span-after",
        "unknown-span-before",
        "no-end",
        "no-start",
        "before-first-event",
        "before-root-agent",
        "bad-anchor",
        "bad-span-type",
    ],
)
def test_each_error_says_what_is_wrong(events: list[Any], options: dict[str, Any], message: str) -> None:
    with pytest.raises(RestoreError) as caught:
        restore_snapshot(events, **options)
    assert str(caught.value) == message


def test_a_schema_version_we_do_not_know_is_an_error() -> None:
    events = _simple().events
    events[3]["schemaVersion"] = 2
    with pytest.raises(RestoreError) as caught:
        restore_snapshot(events)
    assert str(caught.value) == (
        "Restore failed: trace event schema version 2 does not match this build's 1. (First at the "
        "'tools:execute:start' event at timestamp 1003: the trace was written by a version of the library "
        "this build does not know.)"
    )


def test_a_trace_with_nothing_usable_is_empty_and_says_why() -> None:
    events = _simple().events
    for event in events:
        del event["schemaVersion"]
    with pytest.raises(RestoreError) as caught:
        restore_snapshot(events)
    assert str(caught.value).startswith(
        f"Restore failed: Trace is empty. It has no usable event: {len(events)} malformed events: "
        f"{len(events)} without a schemaVersion number (first: type 'runWith:start' at timestamp 1000)."
    )


@pytest.mark.parametrize("events", ["trace.jsonl", Path("trace.jsonl"), b"[]", {"events": []}, 42])
def test_events_must_be_a_list_of_events(events: Any) -> None:
    with pytest.raises(RestoreError, match=r"Restore failed: events must be a list of trace events, not \w+"):
        restore_snapshot(events)
