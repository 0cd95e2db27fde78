"""restore_snapshot: the cut, frames, journals, nesting, callIds, repair, provenance, bad input, errors."""

from __future__ import annotations

import asyncio
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
from tests.restore_traces import TRACE, Trace, frame_at, run_events

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
    assert frame_at(restore_snapshot(shuffled), "root/agent:a:0")["memory"] == {"m": 1}


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
    after = frame_at(restore_snapshot(t.events, span_id="tb", anchor="after"), "root/agent:a:0")
    assert after["journal"]["tool"] == {"k": {"output": 7, "contentHash": "k"}}
    assert after["state"] == {"status": "running"}
    before = frame_at(restore_snapshot(t.events, span_id="tb", anchor="before"), "root/agent:a:0")
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
    journal = frame_at(restore_snapshot(t.events), "root/agent:a:0")["journal"]
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
    tools = frame_at(restore_snapshot(t.events), "root/agent:a:0")["journal"]["tool"]
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

    events = run_events(main)
    restored = restore_snapshot(events)
    (entry,) = frame_at(restored, "root/agent:a:0")["journal"]["tool"].values()
    assert entry["output"] is None
    assert entry["error"].startswith("not replayable: $ is a builtins.set")
    assert entry == next(iter(frame_at(box["dump"], "root/agent:a:0")["journal"]["tool"].values()))
    asyncio.run(run_with(lambda: agent(None), snapshot=restored))
    assert runs == ["k", "k"]  # never replayed


def test_memory_comes_from_generation_end_and_the_root_memory_from_run_with_end() -> None:
    async def child(props: Any) -> None:
        memory()["seen"] = props

    async def main() -> None:
        memory()["root"] = True
        await create_agent("c", child)(1)
        await create_agent("c", child)(2)

    restored = restore_snapshot(run_events(main))
    assert restored["root"]["memory"] == {"root": True}
    assert [c["memory"] for c in restored["root"]["children"].values()] == [{"seen": 1}, {"seen": 2}]


def test_a_running_frame_has_no_memory_until_its_generation_ends() -> None:
    t = Trace()
    t.add("runWith:start", "r")
    t.agent("a", "s1", "r")
    t.add("tools:execute:start", "tb", "s1-g", agentId="a")
    t.add("tools:execute:end", "tb", "s1-g", agentId="a", toolResults=[], success=True)
    t.end("a", "s1", "r", memory={"done": True})
    assert frame_at(restore_snapshot(t.events, span_id="tb"), "root/agent:a:0")["memory"] == {}
    assert frame_at(restore_snapshot(t.events), "root/agent:a:0")["memory"] == {"done": True}


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
    frame = frame_at(from_file, "root/agent:a:0")
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
    assert list(frame_at(restored, "root/agent:a:0")["children"]) == ["root/agent:a:0/agent:b:0"]


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
