"""Run rewind from a frame index: a rewind made from it is the snapshot `restore_snapshot` makes, at every cut.

For each run (the corpus traces, a generated run, hand-made runs with the repairs restore makes),
every span's every cut (before and after) is made both ways: `restore_from_index` (the frames the cut leaves
open, rebuilt from their own events, and the sealed frames' nodes) and `restore_snapshot` over all
the run's events. The documents must be equal, key order included, and so must their ids.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from bench.gen_trace import generate
from devtool.actions.frame_indexer import build_index
from devtool.actions.run_rewind import restore_from_index
from devtool.core.debugger import restore_snapshot
from devtool.core.errors import RestoreError
from devtool.core.snapshot_tree import assemble, node_id, referenced, snapshot_id
from devtool.store import Store, get_snapshot, load_file
from devtool.store.frame_index_tables import index_state, runs_to_index
from devtool.store.snapshots import read_nodes, save_tree, snapshot_counts
from tests.conftest import CORPUS, Trace

CORPUS_TRACES = sorted((CORPUS / "rejelly").glob("*.trace.jsonl"))


def every_cut(store: Store, trace_id: str, events: list[dict[str, Any]], *, most: int = 1000) -> tuple[int, int]:
    """Check the cuts of every span of the run (of `most` spans spread over it: each cut is a whole
    restore); return (cuts made from the index, cuts restore refuses)."""
    spans = [row[0] for row in store.query("SELECT DISTINCT span_id FROM events WHERE trace_id = ?", [trace_id])]
    from_index = refused = 0
    for span in sorted(spans)[:: max(1, len(spans) // most)]:
        for anchor in ("before", "after"):
            try:
                expected = restore_snapshot(events, span_id=span, anchor=anchor)
            except RestoreError:
                refused += 1
                assert restore_from_index(store, trace_id, span, anchor) is None, (span, anchor)
                continue
            tree = restore_from_index(store, trace_id, span, anchor)
            if tree is None:
                continue
            from_index += 1
            document = assemble(tree.top, _with_stored(store, tree.nodes))
            assert orjson.dumps(document) == orjson.dumps(expected), (span, anchor)
            assert node_id(tree.top) == snapshot_id(expected)
    return from_index, refused


def _with_stored(store: Store, nodes: dict[str, Any]) -> dict[str, Any]:
    """`nodes` and every stored node they point at."""
    wanted = {child for node in nodes.values() for child in referenced(node) if child not in nodes}
    return {**read_nodes(store, wanted), **nodes}


def _events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("path", CORPUS_TRACES, ids=lambda path: path.name.split(".")[0])
def test_every_cut_of_the_corpus_is_the_snapshot_restore_makes(store: Store, path: Path) -> None:
    load_file(store, path)
    events = _events(path)
    for (trace_id,) in store.query("SELECT trace_id FROM runs"):
        state = build_index(store, trace_id)
        assert state.indexed, state.reason
        assert state.fresh
        from_index, _ = every_cut(store, trace_id, [e for e in events if e["trace"]["traceId"] == trace_id])
        assert from_index >= 10


def test_every_cut_of_a_generated_run(store: Store, tmp_path: Path) -> None:
    trace = generate(tmp_path / "gen.jsonl", events=3000, seed=3, concurrency=5)
    load_file(store, trace.path)
    state = build_index(store, trace.trace_id)
    assert (state.indexed, state.fresh, state.events > 1000) == (True, True, True)
    from_index, refused = every_cut(store, trace.trace_id, _events(trace.path), most=300)
    assert from_index > 300
    assert refused > 0  # spans with no end, and `before` the run's first event: the index says so too


def test_repairs_a_parent_that_ended_before_its_children(store: Store, tmp_path: Path) -> None:
    # A parent ends while a child runs (the child is failed at the parent's end), the child ends
    # later (its own outcome replaces the repair), and a child starts after its parent ended.
    run = Trace()
    root = run.start("runWith", agentId="")
    parent = run.start("agent", root, agentId="parent", callId="root/agent:parent:0")
    child = run.start("agent", parent, agentId="child", callId="root/agent:parent:0/agent:child:0")
    gen = run.start("generation", child, agentId="child")
    run.end(parent, success=True, result={"done": 1})
    late = run.start("agent", parent, agentId="late")  # no callId: numbered by its parent
    run.end(gen, memory={"seen": 2})
    run.end(child, success=True, result={"child": "done"})
    run.end(late, success=False, error={"name": "Boom", "message": "late"})
    other = run.start("agent", root, agentId="other")
    tools = run.start("tools:execute", other, agentId="other")
    ok = {"callId": "t0", "success": True, "contentHash": "h0", "output": {"x": 1}}
    run.end(tools, toolResults=[ok, {"success": False, "contentHash": "h1", "error": {"name": "E"}}])
    run.end(other, success=True, result=None)
    run.end(root, success=True, result={"ok": True}, memory={"final": True})
    load_file(store, run.write(tmp_path / "repairs.jsonl"))
    assert build_index(store, run.trace_id).indexed
    from_index, _ = every_cut(store, run.trace_id, run.events)
    assert from_index == 12  # of 14: `before` the run frame and the first agent are refused


def test_a_run_without_run_frame_events_has_a_synthetic_root(store: Store, tmp_path: Path) -> None:
    run = Trace()
    first = run.start("agent", agentId="first")
    run.end(first, success=True, result=1)
    second = run.start("agent", agentId="second")
    turn = run.start("turn", second, agentId="second")
    run.end(turn, success=True, contentHash="c1", message={"role": "assistant"})
    run.end(second, success=False, error={"name": "Late", "message": "failed"})
    load_file(store, run.write(tmp_path / "bare.jsonl"))
    assert build_index(store, run.trace_id).indexed
    from_index, refused = every_cut(store, run.trace_id, run.events)
    # Of 6 cuts, `before` the first agent is refused; `before` the second is left to a walk of every
    # event: no event of a frame still open at that cut shows that the cut is not the run's first.
    assert (from_index, refused) == (4, 1)


def test_a_rewind_stored_from_the_index_reads_back_whole(store: Store, tmp_path: Path) -> None:
    trace = generate(tmp_path / "gen.jsonl", events=3000, seed=5, concurrency=4)
    load_file(store, trace.path)
    build_index(store, trace.trace_id)
    span = store.query(
        "SELECT span_id FROM spans WHERE trace_id = ? AND agent_id = 'worker' AND kind = 'agent' ORDER BY start_ts "
        "LIMIT 1 OFFSET 80",
        [trace.trace_id],
    )[0][0]
    tree = restore_from_index(store, trace.trace_id, span, "after")
    assert tree is not None
    nodes = store.query("SELECT count(*) FROM rewind.snapshot_nodes")[0][0]
    stored_id = save_tree(store, tree.top, tree.nodes)
    expected = restore_snapshot(_events(trace.path), span_id=span, anchor="after")
    assert stored_id == snapshot_id(expected)
    stored = get_snapshot(store, stored_id)
    assert stored.snapshot == expected
    # Only the open frames were new: the sealed ones are the index's nodes, shared.
    added = store.query("SELECT count(*) FROM rewind.snapshot_nodes")[0][0] - nodes
    assert 0 < added <= len(tree.nodes) < snapshot_counts(store, stored).frames / 4


def test_an_index_is_used_only_while_the_run_has_not_grown(store: Store, tmp_path: Path) -> None:
    run = Trace()
    root = run.start("runWith", agentId="")
    agent = run.start("agent", root, agentId="a", callId="root/agent:a:0")
    run.end(agent, success=True, result=1)
    load_file(store, run.write(tmp_path / "one.jsonl"))
    assert runs_to_index(store, min_events=0) == {run.trace_id: 3}
    assert runs_to_index(store, min_events=4) == {}
    build_index(store, run.trace_id)
    assert runs_to_index(store, min_events=0) == {}
    assert restore_from_index(store, run.trace_id, agent, "after") is not None
    grown = Trace(run.trace_id, start_ms=run.now + 10)
    grown.point("sys:log", root, agentId="")
    load_file(store, grown.write(tmp_path / "more.jsonl"))
    state = index_state(store, run.trace_id)
    assert state is not None
    assert (state.indexed, state.fresh) == (True, False)
    assert restore_from_index(store, run.trace_id, agent, "after") is None
    assert runs_to_index(store, min_events=0) == {run.trace_id: 4}


def test_what_is_not_indexed_says_why(store: Store, tmp_path: Path) -> None:
    run = Trace()
    root = run.start("runWith", agentId="")
    first = run.start("agent", root, agentId="a", callId="same")
    run.end(first, success=True, result=1)
    again = run.start("agent", root, agentId="b", callId="same")
    run.end(again, success=True, result=2)
    load_file(store, run.write(tmp_path / "dup.jsonl"))
    state = build_index(store, run.trace_id)
    assert (state.indexed, state.fresh) == (False, True)
    assert state.reason == "callId 'same' is used by two agents of one parent"
    assert restore_from_index(store, run.trace_id, first, "after") is None
    assert runs_to_index(store, min_events=0) == {}  # not tried again until the run grows


def test_a_run_stored_out_of_time_order_is_not_indexed(store: Store, tmp_path: Path) -> None:
    run = Trace()
    root = run.start("runWith", agentId="")
    agent = run.start("agent", root, agentId="a", callId="root/agent:a:0", at=run.now + 10)
    run.end(agent, success=True, result=1)
    late = Trace(run.trace_id, start_ms=run.now - 5)  # a second file, with earlier timestamps
    late.start("agent", root, agentId="b", callId="root/agent:b:0")
    load_file(store, run.write(tmp_path / "first.jsonl"))
    load_file(store, late.write(tmp_path / "late.jsonl"))
    state = build_index(store, run.trace_id)
    reason = "its events are not stored in time order (event 4 is earlier than the last)"
    assert (state.indexed, state.reason) == (False, reason)


def test_a_log_line_stored_late_still_gives_every_cut_as_restore_does(store: Store, tmp_path: Path) -> None:
    """Restore reads no log line (`IGNORED_TYPES`), so where one lies in time does not stop the index."""
    run = Trace()
    root = run.start("runWith", agentId="")
    for index in range(3):
        agent = run.start("agent", root, agentId="a", callId=f"root/agent:a:{index}", at=run.now + 10)
        run.end(agent, success=True, result=index)
    run.end(root, success=True)
    late = Trace(run.trace_id, start_ms=run.now - 25)  # a second file, with an earlier timestamp
    late.point("sys:log", root, agentId="", message="late")
    load_file(store, run.write(tmp_path / "first.jsonl"))
    load_file(store, late.write(tmp_path / "late.jsonl"))
    assert build_index(store, run.trace_id).indexed
    from_index, _ = every_cut(store, run.trace_id, run.events + late.events)
    assert from_index >= 6  # both cuts of each agent


def test_what_a_rewind_makes_does_not_grow_with_the_frames_that_had_ended(store: Store, tmp_path: Path) -> None:
    """The middle of a run four times longer seals four times the workers; a rewind there still
    makes a few nodes of a few kilobytes (the orchestrator lists chunks, not its workers), the same
    snapshot `restore_snapshot` makes."""
    made: list[tuple[int, int, int]] = []
    for events in (4000, 16000):
        trace = generate(tmp_path / f"gen{events}.jsonl", events=events, seed=events)
        load_file(store, trace.path)
        assert build_index(store, trace.trace_id).indexed
        span = store.query(
            "SELECT span_id FROM spans WHERE trace_id = ? AND kind = 'agent' AND agent_id = 'worker' "
            "ORDER BY start_ts LIMIT 1 OFFSET ?",
            [trace.trace_id, trace.workers // 2],
        )[0][0]
        tree = restore_from_index(store, trace.trace_id, span, "after")
        assert tree is not None
        stored_id = save_tree(store, tree.top, tree.nodes)
        assert stored_id == snapshot_id(restore_snapshot(_events(trace.path), span_id=span, anchor="after"))
        written = sum(len(orjson.dumps(node)) for node in tree.nodes.values())
        made.append((trace.workers, len(tree.nodes), written))
    (small_workers, small_nodes, small_bytes), (big_workers, big_nodes, big_bytes) = made
    assert big_workers > 3.5 * small_workers
    assert big_nodes <= small_nodes + 3
    assert big_bytes < 1.5 * small_bytes
