"""`index_run`: what it records of each frame, and the runs it refuses to index (and why).

That a rewind made from the index is the snapshot `restore_snapshot` makes, at every cut, is tested
through the store, where the index lives: tests/test_actions_run_rewind.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from bench.gen_trace import generate
from devtool.core.budget import merged
from devtool.core.frame_index import BATCH, index_run, index_stream
from devtool.core.frame_index_records import NO_PARENT, ROOT, Batch, NotIndexable
from devtool.core.restore import IGNORED_TYPES
from devtool.core.snapshot_tree import FANOUT, referenced
from tests.conftest import Trace


def rows(run: Trace) -> list[tuple[int, dict[str, Any]]]:
    return list(enumerate(run.events, start=1))


def test_a_frame_is_changed_last_by_its_own_end_or_by_an_ancestor_that_fails_it() -> None:
    run = Trace()
    root = run.start("runWith", agentId="")  # 1
    parent = run.start("agent", root, agentId="parent", callId="p")  # 2
    child = run.start("agent", parent, agentId="child", callId="c")  # 3
    run.end(parent, success=True, result=1)  # 4: fails the child, still running
    done = run.start("agent", root, agentId="done", callId="d")  # 5
    run.end(done, success=True, result=2)  # 6
    run.point("sys:log", root, agentId="")  # 7: ignored by restore, so not handed to the index
    run.end(child, success=True, result=3)  # 8: the child's own end replaces the repair
    run.end(root, success=True, result=4)  # 9
    handed = [row for row in rows(run) if row[1]["type"] != "sys:log"]
    index = index_run(handed)
    assert index.events == 8
    frames = {frame.call_id: frame for frame in index.frames}
    assert [(f.index, f.parent) for f in index.frames] == [(ROOT, NO_PARENT), (1, ROOT), (2, 1), (3, ROOT)]
    assert (frames["c"].created, frames["c"].last, frames["c"].events) == (3, 8, (3, 8))
    # The parent's own events end at 4, but the child under it changed until 8.
    assert (frames["p"].created, frames["p"].last, frames["p"].events) == (2, 8, (2, 4))
    assert (frames["d"].created, frames["d"].last, frames["d"].status) == (5, 6, "completed")
    assert frames["root"].events == (1, 9)
    # Every frame but the root (rebuilt at each cut) has its node, as the run ends.
    assert frames["root"].node == ""
    assert {frames[key].node for key in "pcd"} <= set(index.nodes)
    assert index.nodes[frames["p"].node]["children"] == {"c": frames["c"].node}
    assert index.nodes[frames["c"].node]["state"] == {"status": "completed", "output": 3}


def test_a_parent_failing_a_child_that_never_ends_changes_it_then() -> None:
    run = Trace()
    root = run.start("runWith", agentId="")  # 1
    parent = run.start("agent", root, agentId="parent", callId="p")  # 2
    run.start("agent", parent, agentId="zombie", callId="z")  # 3
    run.end(parent, success=True, result=1)  # 4
    run.end(root, success=True, result=2)  # 5
    zombie = next(frame for frame in index_run(rows(run)).frames if frame.call_id == "z")
    assert (zombie.events, zombie.last, zombie.status) == ((3,), 4, "failed")


def test_what_is_not_indexed_says_why() -> None:
    run = Trace()
    root = run.start("runWith", agentId="")
    first = run.start("agent", root, agentId="a", callId="same")
    run.end(first, success=True, result=1)
    again = run.start("agent", root, agentId="b", callId="same")
    run.end(again, success=True, result=2)
    with pytest.raises(NotIndexable, match="callId 'same' is used by two agents of one parent"):
        index_run(rows(run))
    with pytest.raises(NotIndexable, match="not stored in time order"):
        index_run([(2, run.events[0]), (1, run.events[1])])
    with pytest.raises(NotIndexable, match="event 2 is not one restore reads"):
        index_run([(1, run.events[0]), (2, dict(run.events[1], schemaVersion=None))])
    with pytest.raises(NotIndexable, match="event 2 is not one restore reads"):
        index_run([(1, run.events[0]), (2, dict(run.events[1], type="agent:teleport"))])
    no_agent_id = {key: value for key, value in run.events[1].items() if key != "agentId"}
    with pytest.raises(NotIndexable, match="event 2 is malformed: 1 malformed event: 1 without an agentId"):
        index_run([(1, run.events[0]), (2, no_agent_id)])
    reused = dict(run.events[3], trace={**run.events[3]["trace"], "spanId": first})
    with pytest.raises(NotIndexable, match="is used by two frames"):
        index_run([(1, run.events[0]), (2, run.events[1]), (3, reused)])
    other = Trace()
    other_root = other.start("runWith", agentId="")
    other.start("agent", other_root, agentId="x", callId="x")
    with pytest.raises(NotIndexable, match="several runs"):
        index_run([(1, run.events[0]), (2, run.events[1]), (3, other.events[1])])
    with pytest.raises(NotIndexable, match="no agent started in it"):
        index_run([])


def test_frames_are_handed_over_while_the_run_is_walked_a_chunk_of_references_at_most(tmp_path: Path) -> None:
    """The index holds the frames still open, not the run: what is final is handed over as it becomes
    final, and no node, the orchestrator's included, holds more than a chunk of references."""
    generated = generate(tmp_path / "run.jsonl", events=6000, seed=2)
    events = [orjson.loads(line) for line in generated.path.read_bytes().splitlines()]
    rows = [(n, event) for n, event in enumerate(events, start=1) if event["type"] not in IGNORED_TYPES]
    walked = 0

    def counted() -> Iterator[tuple[int, dict[str, Any]]]:
        nonlocal walked
        for row in rows:
            walked += 1
            yield row

    handed: list[tuple[int, Batch]] = []
    index_stream(counted(), lambda batch: handed.append((walked, batch)), batch=20)
    assert len(handed) > generated.workers // 20
    assert handed[0][0] < len(rows) / 5  # the first frames long before the run's end
    assert all(len(batch.frames) <= 20 for _, batch in handed)
    nodes = [node for _, batch in handed for node in batch.nodes.values()]
    assert all(len(referenced(node)) <= FANOUT for node in nodes)
    chunks = [chunk for _, batch in handed for chunk in batch.chunks]
    orchestrator = next(f for _, b in handed for f in b.frames if f.call_id == "root/agent:orchestrator:0")
    assert {chunk.frame for chunk in chunks} == {orchestrator.index}
    assert len(chunks) == generated.workers // FANOUT  # every full chunk of its workers
    assert sorted(chunk.position for chunk in chunks) == list(range(len(chunks)))


def test_each_chunk_keeps_the_usage_of_the_frames_it_holds_added_up_in_their_order() -> None:
    """A cut that reuses a chunk reads its usage instead of its frames': at level 0 (FANOUT frames)
    and at level 1 (FANOUT chunks), the sum of its frames' aggregates, models listed as they come."""
    run = Trace()
    root = run.start("runWith", agentId="")
    workers = FANOUT * FANOUT + 3  # one chunk of level 1, and the rest
    for n in range(workers):
        agent = run.start("agent", root, agentId="worker", callId=f"root/agent:worker:{n}")
        if n % 5:  # some workers make no call: their usage is empty
            call = run.start("model:call", agent, agentId="worker")
            usage = {"promptTokens": n % 97, "completionTokens": n % 13, "totalTokens": n % 97 + n % 13}
            run.end(call, adapterId=f"model-{n % 3 + (n > FANOUT * 7)}", provider="p", usage=usage)
        run.end(agent, success=True, result=n)
    run.end(root, success=True, result=None)
    index = index_run(rows(run))
    children = sorted((f for f in index.frames if f.parent == ROOT), key=lambda f: f.position)
    assert len(children) == workers
    by_level = {level: [c for c in index.chunks if c.level == level] for level in (0, 1)}
    assert (len(by_level[0]), len(by_level[1])) == (FANOUT, 1)
    for chunk in index.chunks:
        size = FANOUT ** (chunk.level + 1)
        held = children[chunk.position * size : (chunk.position + 1) * size]
        assert all(frame.aggregate is not None for frame in held)
        assert chunk.aggregate == merged(frame.aggregate for frame in held if frame.aggregate is not None)
    whole = by_level[1][0].aggregate
    assert whole["callCount"] == sum(1 for n in range(FANOUT * FANOUT) if n % 5)
    assert [item["name"] for item in whole["items"]] == ["model-1", "model-2", "model-0", "model-3"]


def test_the_index_is_the_same_whatever_the_batch_size_it_is_handed_over_in(tmp_path: Path) -> None:
    """The batch size bounds what is held and written at a time, not what is written: a batch of one
    frame, of a few and the default give the same frames, chunks, nodes and counts."""
    generated = generate(tmp_path / "run.jsonl", events=4000, seed=5)
    events = [orjson.loads(line) for line in generated.path.read_bytes().splitlines()]
    rows = [(n, event) for n, event in enumerate(events, start=1) if event["type"] not in IGNORED_TYPES]

    def collected(**size: int) -> tuple[Any, ...]:
        batches: list[Batch] = []
        index_stream(rows, batches.append, **size)
        assert all(len(batch.frames) <= size.get("batch", BATCH) for batch in batches)
        frames = sorted((frame for batch in batches for frame in batch.frames), key=lambda frame: frame.index)
        chunks = [chunk for batch in batches for chunk in batch.chunks]
        nodes = {key: node for batch in batches for key, node in batch.nodes.items()}
        counts = {key: count for batch in batches for key, count in batch.counts.items()}
        return frames, chunks, nodes, counts, len(batches)

    *default, handed = collected()
    for size in (1, 7):
        *found, more = collected(batch=size)
        assert found == default
        assert more > handed
