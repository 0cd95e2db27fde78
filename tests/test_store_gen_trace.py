"""The benchmark's trace generator (bench/gen_trace.py): exact size, valid, realistic, deterministic."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import orjson

from bench.gen_trace import MODEL, TOOLS, generate
from devtool.core.jsonvalue import content_hash
from devtool.store import Store, load_file
from devtool.store.event_gate import trace_event_problem
from devtool.store.queries import frame_tree, get_run


def test_exactly_n_valid_events_in_emit_order(tmp_path: Path) -> None:
    info = generate(tmp_path / "t.jsonl", events=5000, seed=3)
    events = [orjson.loads(line) for line in (tmp_path / "t.jsonl").read_bytes().splitlines()]
    assert info.events == len(events) == 5000
    assert info.bytes == (tmp_path / "t.jsonl").stat().st_size
    assert [trace_event_problem(e) for e in events if trace_event_problem(e)] == []
    assert {e["trace"]["traceId"] for e in events} == {info.trace_id}
    stamps = [e["timestamp"] for e in events]
    assert stamps == sorted(stamps)
    assert (stamps[0], stamps[-1]) == (info.first_ms, info.last_ms)
    types = Counter(e["type"] for e in events)
    assert types["agent:start"] == types["agent:end"] == info.workers + 1
    assert info.workers > 150
    assert types["tools:execute:end"] > 0
    assert types["budget:update"] > 0
    assert any(e["type"] == "agent:end" and e["success"] is False for e in events)


def test_call_ids_and_content_hashes_are_real(tmp_path: Path) -> None:
    generate(tmp_path / "t.jsonl", events=2000, seed=5)
    events = [orjson.loads(line) for line in (tmp_path / "t.jsonl").read_bytes().splitlines()]
    workers = [e for e in events if e["type"] == "agent:start" and e["agentId"] == "worker"]
    assert all(e["callId"].startswith("root/agent:orchestrator:0/agent:worker:") for e in workers)
    turn = next(e for e in events if e["type"] == "turn:end" and e["success"])
    assert turn["contentHash"] == content_hash([turn["messages"], None, MODEL, TOOLS])
    batch = next(e for e in events if e["type"] == "tools:execute:end")
    result = batch["toolResults"][0]
    assert result["contentHash"] == content_hash({"name": result["toolName"], "input": result["input"]})
    assert result["callId"].endswith(f"/tool:{result['toolName']}:0")


def test_the_same_seed_writes_the_same_bytes(tmp_path: Path) -> None:
    generate(tmp_path / "a.jsonl", events=1000, seed=9)
    generate(tmp_path / "b.jsonl", events=1000, seed=9)
    generate(tmp_path / "c.jsonl", events=1000, seed=10)
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    assert (tmp_path / "a.jsonl").read_bytes() != (tmp_path / "c.jsonl").read_bytes()


def test_it_loads_as_one_finished_run(store: Store, tmp_path: Path) -> None:
    info = generate(tmp_path / "t.jsonl", events=3000, seed=1)
    load_file(store, tmp_path / "t.jsonl")
    run = get_run(store, info.trace_id)
    assert (run.name, run.status, run.running, run.agents) == ("orchestrator", "completed", 0, info.workers + 1)
    (root,) = frame_tree(store, info.trace_id, depth=3).nodes
    assert (root.span_id, root.kind, root.children[0].span_id) == (
        info.root_span_id,
        "runWith",
        info.orchestrator_span_id,
    )
    generation = root.children[0].children[0]
    assert generation.child_count == info.workers
