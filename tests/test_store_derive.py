"""Spans and run summaries derived in SQL: pairing, status, nesting, and traces that arrive in parts."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from devtool.store import Store, append_events, load_file
from devtool.store.queries import get_run
from tests.conftest import Trace


def spans(store: Store, trace_id: str) -> dict[str, dict[str, Any]]:
    rows = store.query(
        "SELECT span_id, kind, instant, name, status, error, start_ts, end_ts, depth, frame_parent_id, events, "
        "call_id, content_hash, cache, frame_children FROM spans WHERE trace_id = ?",
        [trace_id],
    )
    keys = ("kind", "instant", "name", "status", "error", "start", "end", "depth", "frame_parent", "events")
    keys += ("call_id", "content_hash", "cache", "frame_children")
    return {row[0]: dict(zip(keys, row[1:], strict=True)) for row in rows}


def nested_run() -> tuple[Trace, dict[str, str]]:
    t = Trace()
    ids: dict[str, str] = {}
    ids["run"] = t.start("runWith")
    ids["agent"] = t.start("agent", ids["run"], agentId="planner", callId="root/agent:planner:0")
    ids["generation"] = t.start("generation", ids["agent"], generationId=0)
    ids["loop"] = t.start("promptAgent", ids["generation"])
    ids["turn"] = t.start("turn", ids["loop"], step=0, callId="root/agent:planner:0/prompt:planner:0")
    ids["call"] = t.start("model:call", ids["turn"], adapterId="scripted")
    ids["budget"] = t.point("budget:update", ids["call"], delta={"totalTokens": 3})
    t.end(ids["call"], success=True, usage={"promptTokens": 2, "completionTokens": 1})
    t.end(ids["turn"], success=True, contentHash="h" * 64, cache=False)
    ids["tools"] = t.start("tools:execute", ids["loop"], toolNames=["search", "fetch"])
    t.point("sys:log", ids["tools"], span=ids["tools"], message="retrying fetch")
    t.end(ids["tools"], success=False, error={"name": "ToolError", "message": "fetch timed out"})
    t.end(ids["loop"], success=True)
    t.end(ids["generation"], success=True, memory={"k": 1})
    t.end(ids["agent"], success=True)
    ids["log"] = t.point("sys:log", ids["run"], message="all done", level="info")
    t.end(ids["run"], success=True)
    return t, ids


def test_starts_and_ends_pair_into_spans(store: Store, tmp_path: Path) -> None:
    t, ids = nested_run()
    load_file(store, t.write(tmp_path / "run.jsonl"))
    found = spans(store, t.trace_id)
    assert len(found) == 9
    turn = found[ids["turn"]]
    assert (turn["kind"], turn["name"], turn["status"], turn["events"]) == ("turn", "turn 0", "completed", 2)
    assert (turn["call_id"], turn["content_hash"], turn["cache"]) == (
        "root/agent:planner:0/prompt:planner:0",
        "h" * 64,
        False,
    )
    assert turn["end"] - turn["start"] == 4
    tools = found[ids["tools"]]
    assert (tools["name"], tools["status"], tools["error"], tools["events"]) == (
        "search, fetch",
        "failed",
        "fetch timed out",
        3,  # its start, its end, and the log line that carries its span id
    )
    budget = found[ids["budget"]]
    assert (budget["kind"], budget["instant"], budget["start"], budget["end"]) == (
        "budget:update",
        True,
        budget["start"],
        budget["start"],
    )
    assert found[ids["log"]]["name"] == "all done"


def test_nesting_depth_and_the_frame_parent_looks_through_loops_and_model_calls(store: Store, tmp_path: Path) -> None:
    t, ids = nested_run()
    load_file(store, t.write(tmp_path / "run.jsonl"))
    found = spans(store, t.trace_id)
    depth = {name: found[ids[name]]["depth"] for name in ids}
    assert depth == {
        "run": 0,
        "agent": 1,
        "generation": 2,
        "loop": 3,
        "turn": 4,
        "call": 5,
        "budget": 6,
        "tools": 4,
        "log": 1,
    }
    frame_parent = {
        name: found[ids[name]]["frame_parent"] for name in ("agent", "generation", "turn", "tools", "budget")
    }
    assert frame_parent == {
        "agent": ids["run"],
        "generation": ids["agent"],
        "turn": ids["generation"],  # the promptAgent loop is looked through
        "tools": ids["generation"],
        "budget": ids["turn"],  # and so is the model call
    }


def test_a_start_without_its_end_is_running_and_so_is_the_run(store: Store) -> None:
    t = Trace()
    run = t.start("runWith")
    agent = t.start("agent", run, agentId="slow")
    t.end(t.start("turn", agent))
    append_events(store, t.events)
    found = spans(store, t.trace_id)
    assert found[agent]["status"] == "running"
    assert found[agent]["end"] is None
    summary = get_run(store, t.trace_id)
    assert (summary.status, summary.running) == ("running", 2)


def test_an_end_without_its_start_is_kept(store: Store) -> None:
    t = Trace()
    run = t.start("runWith")
    agent = t.start("agent", run)
    t.end(agent, success=False, error="boom")
    t.end(run, success=False)
    append_events(store, t.events[2:])  # the trace was cut: both starts are missing
    found = spans(store, t.trace_id)
    assert found[agent]["status"] == "failed"
    assert found[agent]["error"] == "boom"
    assert found[agent]["start"] == found[agent]["end"]
    assert found[agent]["depth"] == 1
    assert get_run(store, t.trace_id).status == "failed"


def test_a_trace_in_parts_ends_as_if_loaded_whole(store: Store, tmp_path: Path) -> None:
    """Files (or live batches) of one trace, in any cut: the spans are those of the whole trace."""
    t, _ = nested_run()
    whole = Store(tmp_path / "whole.duckdb")
    try:
        load_file(whole, t.write(tmp_path / "whole.jsonl"))
        expected = spans(whole, t.trace_id)
    finally:
        whole.close()
    cuts = [0, 3, 7, 8, 12, len(t.events)]
    for index, (start, end) in enumerate(itertools.pairwise(cuts)):
        part = Trace(t.trace_id)
        part.events = t.events[start:end]
        load_file(store, part.write(tmp_path / f"part{index}.jsonl"))
    assert spans(store, t.trace_id) == expected


def test_children_that_arrive_before_their_parent_move_under_it(store: Store) -> None:
    t = Trace()
    run = t.start("runWith")
    agent = t.start("agent", run)
    generation = t.start("generation", agent)
    turn = t.start("turn", generation)
    t.end(turn)
    t.end(generation)
    t.end(agent)
    t.end(run)
    late_parents = [e for e in t.events if e["trace"]["spanId"] in (agent, generation)]
    append_events(store, [e for e in t.events if e not in late_parents])
    assert spans(store, t.trace_id)[turn]["depth"] == 0  # until its parents come, an orphan is a root
    append_events(store, late_parents)
    found = spans(store, t.trace_id)
    assert [found[s]["depth"] for s in (run, agent, generation, turn)] == [0, 1, 2, 3]
    assert found[turn]["frame_parent"] == generation
    assert [found[s]["frame_children"] for s in (run, agent, generation, turn)] == [1, 1, 1, 0]


def test_a_parent_cycle_neither_hangs_nor_hides_the_spans(store: Store) -> None:
    t = Trace()
    t.point("a:b", "2", span="1")
    t.point("a:b", "1", span="2")
    t.point("a:b", "3", span="3")
    append_events(store, t.events)
    found = spans(store, t.trace_id)
    assert sorted(found) == ["1", "2", "3"]
    assert {s["depth"] for s in found.values()} == {0}


def test_a_duplicated_event_does_not_make_a_second_span(store: Store) -> None:
    t = Trace()
    run = t.start("runWith")
    t.end(run)
    # The same start twice, sent again a moment later (the same event twice is stored once).
    again = {**t.events[0], "timestamp": t.events[0]["timestamp"] + 0.5}
    append_events(store, [t.events[0], again, t.events[0], t.events[1]])
    found = spans(store, t.trace_id)
    assert len(found) == 1
    assert (found[run]["status"], found[run]["events"]) == ("completed", 3)


def test_one_file_of_several_runs_makes_one_summary_each(store: Store, tmp_path: Path) -> None:
    first, second = Trace(), Trace(start_ms=1_790_000_100_000)
    first.end(first.start("agent", agentId="alpha"))
    second.end(second.start("agent", agentId="beta"), success=False)
    path = tmp_path / "two.jsonl"
    path.write_bytes(first.write(tmp_path / "a").read_bytes() + second.write(tmp_path / "b").read_bytes())
    result = load_file(store, path)
    assert sorted(result.traces) == sorted([first.trace_id, second.trace_id])
    assert (get_run(store, first.trace_id).name, get_run(store, first.trace_id).status) == ("alpha", "completed")
    assert (get_run(store, second.trace_id).name, get_run(store, second.trace_id).status) == ("beta", "failed")


def test_an_unknown_span_kind_is_a_span_like_any_other(store: Store) -> None:
    t = Trace()
    custom = t.start("retrieval:query", name="vector search")
    t.end(custom)
    append_events(store, t.events)
    found = spans(store, t.trace_id)[custom]
    assert (found["kind"], found["instant"], found["status"]) == ("retrieval:query", False, "completed")
