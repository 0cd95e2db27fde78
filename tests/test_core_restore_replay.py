"""restore_snapshot against the runtime itself: random agent programs are run, restored and replayed.

A program is a tree of agents; each step is a direct tool call, a prompt whose model asks for tools,
a memory write, a sub-agent, or sub-agents run in parallel (their events interleave); agents may
fail (their parent catches it); tools repeat inputs, fail, or return values that are not JSON.
Everything is deterministic, so a replay asks for exactly the calls of the original run: the only
question is which are served from the snapshot and which run for real.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from devtool.core import (
    MemorySink,
    RestoreError,
    ScriptedModel,
    Tool,
    create_agent,
    create_tool,
    memory,
    prompt,
    run_with,
)
from devtool.core.debugger import dump_snapshot, restore_snapshot
from devtool.core.model import Message
from devtool.core.snapshot import AgentSnapshot, FrameSnapshot, validate


@dataclass(frozen=True)
class Spec:
    """One agent of a program: its id, its steps in order, and whether it raises at the end."""

    agent_id: str
    steps: tuple[Any, ...]
    fails: bool = False


@dataclass
class World:
    """The model and tools of one run, counting what really ran."""

    tool_runs: Counter[str] = field(default_factory=Counter)
    model: ScriptedModel = field(init=False)
    tools: dict[str, Tool] = field(init=False)

    def __post_init__(self) -> None:
        self.model = ScriptedModel(_answer)

        async def lookup(key: str) -> str:
            self.tool_runs["lookup"] += 1
            await asyncio.sleep(0)  # let parallel siblings interleave
            return f"{key}!"

        async def flaky(key: str) -> dict[str, str]:
            self.tool_runs["flaky"] += 1
            await asyncio.sleep(0)
            if key == "x":
                raise ValueError("flaky refuses x")
            return {"v": key}

        def opaque(key: str) -> frozenset[str]:
            self.tool_runs["opaque"] += 1
            return frozenset({key})  # not JSON: journaled as a tombstone, never replayed

        self.tools = {tool.__name__: create_tool(tool.__name__, tool) for tool in (lookup, flaky, opaque)}


def _answer(messages: list[Message]) -> Any:
    last = messages[-1]
    if last["role"] == "tool":
        return f"answer from {len(messages)} messages: {last['content']}"
    _, topic, count = str(last["content"]).split()
    if count == "0":
        return f"nothing to look up for {topic}"
    # Explicit ids: the default ones count the model's calls, which differ on a partial replay.
    calls = [
        {"id": f"call_{topic}_{i}", "name": "lookup" if i % 2 == 0 else "flaky", "arguments": {"key": topic}}
        for i in range(int(count))
    ]
    return {"content": None, "tool_calls": calls}


def _agent(spec: Spec, world: World) -> Any:
    async def handler(props: Any) -> dict[str, Any]:
        for step in spec.steps:
            match step:
                case ("tool", name, key):
                    try:
                        await world.tools[name](key=key)
                    except ValueError:
                        memory()["tool_failures"] = memory().get("tool_failures", 0) + 1
                case ("ask", topic, count):
                    memory()["answer"] = await prompt(
                        f"ask {topic} {count}", tools=[world.tools["lookup"], world.tools["flaky"]]
                    )
                case ("memory", key, value):
                    memory()[key] = value
                case ("child", child):
                    try:
                        await _agent(child, world)(props)
                    except RuntimeError:
                        memory()["child_failures"] = memory().get("child_failures", 0) + 1
                case ("parallel", children):
                    outcomes = await asyncio.gather(
                        *[_agent(child, world)(props) for child in children], return_exceptions=True
                    )
                    memory()["parallel"] = [isinstance(outcome, dict) for outcome in outcomes]
        if spec.fails:
            raise RuntimeError(f"{spec.agent_id} gave up")
        return {"agent": spec.agent_id, "steps": len(spec.steps)}

    return create_agent(spec.agent_id, handler, model=world.model)


@dataclass
class Recording:
    events: list[Any]
    dump: AgentSnapshot
    result: Any


def run(program: Spec, world: World, *, snapshot: AgentSnapshot | None = None) -> Recording:
    """Run `program` under run_with (a root-level tool call first), dumping at the end of `fn`."""
    sink, box = MemorySink(), {}

    async def main() -> Any:
        memory()["root"] = "set"
        await world.tools["lookup"](key="root")
        try:
            result = await _agent(program, world)(None)
        except RuntimeError:
            result = None
        box["dump"] = dump_snapshot()
        return result

    result = asyncio.run(run_with(main, snapshot=snapshot, sinks=[sink]))
    return Recording(sink.events, box["dump"], result)


# -- what a replay must call for real, from the original trace alone ------------------------------


@dataclass(frozen=True)
class Call:
    """One model or tool call of a run: where its end event is, what it was, how it went."""

    position: int
    frame: str
    kind: str
    digest: str | None
    replayable: bool  # journaled: it succeeded and its output is JSON
    served: bool  # answered from a snapshot's journal, not by the model or the tool


def calls_of(events: list[Any]) -> Iterator[Call]:
    for position, event in enumerate(events):
        if event["type"] == "turn:end":
            frame = _frame(event["callId"])
            yield Call(position, frame, "prompt", event["contentHash"], event["success"], event["cache"])
        elif event["type"] == "tools:execute:end":
            for result in event["toolResults"]:
                replayable = result["success"] and not result.get("tombstone", False)
                yield Call(
                    position, _frame(result["callPath"]), "tool", result["contentHash"], replayable, result["cache"]
                )


def _frame(call_id: str) -> str:
    return call_id.rsplit("/", 1)[0]


Calls = Counter[tuple[str, str, str | None]]


def expected_real_calls(events: list[Any], last_kept: int) -> Calls:
    """The calls a replay makes for real, from the original trace alone: all but those whose input
    was journaled, in the same frame, by a replayable call whose end event is at or before `last_kept`."""
    calls = list(calls_of(events))
    served = {(c.frame, c.kind, c.digest) for c in calls if c.position <= last_kept and c.replayable}
    return Counter((c.frame, c.kind, c.digest) for c in calls if (c.frame, c.kind, c.digest) not in served)


def real_calls(events: list[Any]) -> Calls:
    """The calls of a (replayed) run that the model or a tool answered."""
    return Counter((c.frame, c.kind, c.digest) for c in calls_of(events) if not c.served)


def replay(program: Spec, snapshot: AgentSnapshot | None) -> tuple[Recording, World]:
    world = World()
    return run(program, world, snapshot=snapshot), world


# -- comparing snapshots ------------------------------------------------------------------------------


def frames(root: FrameSnapshot) -> dict[str, FrameSnapshot]:
    found = {root["callId"]: root}
    for key, child in root["children"].items():
        assert child["callId"] == key
        found.update(frames(child))
    return found


def comparable(frame: FrameSnapshot) -> dict[str, Any]:
    """What restore and dump must agree on (budgetState is the dump's alone)."""
    return {
        "agentId": frame["agentId"],
        "memory": frame["memory"],
        "journal": frame["journal"],
        "state": frame["state"],
        "children": sorted(frame["children"]),
    }


def assert_restored_equals_dump(restored: AgentSnapshot, recording: Recording) -> None:
    ours, dumped = frames(restored["root"]), frames(recording.dump["root"])
    assert ours.keys() == dumped.keys()
    for call_id in dumped.keys() - {"root"}:
        assert comparable(ours[call_id]) == comparable(dumped[call_id]), call_id
    root, dumped_root = ours["root"], dumped["root"]
    assert root["memory"] == dumped_root["memory"] == {"root": "set"}
    assert root["journal"] == dumped_root["journal"]
    # The dump was taken inside run_with (running); the trace goes on to runWith:end.
    assert dumped_root["state"] == {"status": "running"}
    assert root["state"] == {"status": "completed", "output": recording.result}


def without_call_ids(events: list[Any]) -> list[Any]:
    """The events as the TypeScript library writes them: no callId on agent and runWith events."""
    return [
        {k: v for k, v in event.items() if k != "callId"}
        if event["type"].split(":")[0] in ("agent", "runWith")
        else event
        for event in events
    ]


# -- programs -----------------------------------------------------------------------------------------

NAMES = st.sampled_from(["alpha", "beta", "gamma"])
KEYS = st.sampled_from(["a", "b", "x"])  # few keys: identical inputs repeat; "x" makes flaky fail
LEAF_STEPS = st.one_of(
    st.tuples(st.just("tool"), st.sampled_from(["lookup", "flaky", "opaque"]), KEYS),
    st.tuples(st.just("ask"), KEYS, st.integers(0, 2).map(str)),
    st.tuples(st.just("memory"), st.sampled_from(["k1", "k2"]), st.integers(0, 3)),
)


def _spec(steps: st.SearchStrategy[Any]) -> st.SearchStrategy[Spec]:
    return st.builds(Spec, agent_id=NAMES, steps=st.lists(steps, max_size=4).map(tuple), fails=st.booleans())


def _nest(children: st.SearchStrategy[Spec]) -> st.SearchStrategy[Spec]:
    return _spec(
        st.one_of(
            LEAF_STEPS,
            st.tuples(st.just("child"), children),
            st.tuples(st.just("parallel"), st.lists(children, min_size=2, max_size=3).map(tuple)),
        )
    )


PROGRAMS = st.recursive(_spec(LEAF_STEPS), _nest, max_leaves=10)

# A fixed program with every feature, for the span-by-span test.
RICH = Spec(
    "boss",
    (
        ("memory", "k1", 1),
        ("ask", "a", "2"),
        ("tool", "lookup", "a"),
        ("tool", "lookup", "a"),
        ("parallel", (Spec("w", (("ask", "b", "1"), ("tool", "flaky", "x"))), Spec("w", (("tool", "lookup", "b"),)))),
        ("child", Spec("helper", (("tool", "opaque", "a"), ("ask", "x", "2"), ("memory", "k2", 2)), fails=True)),
        ("ask", "b", "0"),
    ),
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(PROGRAMS)
def test_restore_of_the_full_trace_equals_the_dump_and_replays_without_calls(program: Spec) -> None:
    recording = run(program, World())
    restored = restore_snapshot(recording.events)
    validate(restored)
    assert restored["provenance"]["source"] == "restore"
    assert_restored_equals_dump(restored, recording)
    # The TypeScript library's events carry no callId: they are made in call order, the same ones.
    assert_restored_equals_dump(restore_snapshot(without_call_ids(recording.events)), recording)

    replayed, world = replay(program, restored)
    assert replayed.result == recording.result
    assert world.model.calls == 0
    # Only what could not be journaled runs again: failed tool calls and outputs that are not JSON.
    must_rerun = expected_real_calls(recording.events, len(recording.events) - 1)
    assert all(kind == "tool" for _, kind, _ in must_rerun)
    assert real_calls(replayed.events) == must_rerun
    assert world.tool_runs.total() == must_rerun.total()


def test_the_rich_program_exercises_what_it_claims() -> None:
    recording = run(RICH, World())
    types = Counter(event["type"] for event in recording.events)
    results = [r for e in recording.events if e["type"] == "tools:execute:end" for r in e["toolResults"]]
    assert types["agent:start"] == 4
    assert any(r.get("tombstone") for r in results)
    assert any(not r["success"] for r in results)
    assert len(results) - len({(_frame(r["callPath"]), r["contentHash"]) for r in results}) >= 1  # repeats
    assert _interleaved(recording.events, "root/agent:boss:0/agent:w:0", "root/agent:boss:0/agent:w:1")


def _interleaved(events: list[Any], first: str, second: str) -> bool:
    """True when an event of `second` lies between two events of `first`."""
    owners = [event.get("callId", "") for event in events]
    positions = [i for i, owner in enumerate(owners) if owner.startswith(first)]
    return any(owner.startswith(second) for owner in owners[positions[0] : positions[-1]])


def _cuts(events: list[Any]) -> Iterator[tuple[str, str, int]]:
    """Every (span, anchor, index of the last event kept) of a trace, for spans with a start and an end."""
    starts = {e["trace"]["spanId"]: i for i, e in reversed(list(enumerate(events))) if e["type"].endswith(":start")}
    ends = {e["trace"]["spanId"]: i for i, e in enumerate(events) if e["type"].endswith(":end")}
    for span, start in starts.items():
        yield span, "before", start - 1
        if span in ends:
            yield span, "after", ends[span]


def test_every_span_before_and_after_replays_exactly_the_calls_after_the_cut() -> None:
    recording = run(RICH, World())
    events = recording.events
    cuts = list(_cuts(events))
    assert len(cuts) > 60
    first_agent = next(i for i, e in enumerate(events) if e["type"] == "agent:start")
    refused: list[tuple[str, int]] = []
    for span, anchor, last_kept in cuts:
        expected = expected_real_calls(events, last_kept)
        try:
            snapshot: AgentSnapshot | None = restore_snapshot(events, span_id=span, anchor=anchor)
        except RestoreError:
            snapshot = None  # nothing to restore: the replay is a run from scratch
            refused.append((anchor, last_kept))
        replayed, world = replay(RICH, snapshot)
        where = f"{anchor} {events[last_kept + (anchor == 'before')]['type']} {span}"
        assert replayed.result == recording.result, where
        assert real_calls(replayed.events) == expected, where
        assert world.model.calls == sum(n for (_, kind, _), n in expected.items() if kind == "prompt"), where
        assert world.tool_runs.total() == sum(n for (_, kind, _), n in expected.items() if kind == "tool"), where
    # Before runWith:start (the first event) and before the root-level call: nothing to restore yet.
    assert len(refused) == 2
    assert all(anchor == "before" and last_kept < first_agent for anchor, last_kept in refused)


@pytest.mark.parametrize("anchor", ["before", "after"])
def test_a_cut_inside_one_parallel_sibling_keeps_the_other_siblings_work(anchor: str) -> None:
    recording = run(RICH, World())
    events = recording.events
    (second_tools,) = [
        e
        for e in events
        if e["type"] == "tools:execute:start" and e["callId"].startswith("root/agent:boss:0/agent:w:1/")
    ]
    snapshot = restore_snapshot(events, span_id=second_tools["trace"]["spanId"], anchor=anchor)
    boss = snapshot["root"]["children"]["root/agent:boss:0"]
    second = boss["children"]["root/agent:boss:0/agent:w:1"]
    assert second["state"] == {"status": "running"}
    assert len(second["journal"]["tool"]) == (1 if anchor == "after" else 0)
    first = boss["children"]["root/agent:boss:0/agent:w:0"]
    assert first["journal"]["prompt"], "the first sibling's turns before the cut stay with it"
