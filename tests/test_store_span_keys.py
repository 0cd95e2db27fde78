"""A big run's span keys: the pages' lookups answer the same with them as by scanning `spans`."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import orjson
import pytest

from bench.gen_trace import GeneratedTrace, generate
from devtool.store import Store, append_events, derive, load_file, span_keys
from devtool.store.event_sql import insert_events
from devtool.store.queries import frame_tree, span_detail
from devtool.store.queries.navigation import frame_path, generation_memories


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> GeneratedTrace:
    """A run whose orchestrator has more children than the tree pages on their own (1,000)."""
    return generate(tmp_path_factory.mktemp("big") / "run.jsonl", events=24_000, seed=4)


def answers(store: Store, trace: GeneratedTrace) -> dict[str, Any]:
    """What the pages ask of the run, at spans spread over it."""
    rows = store.query("SELECT span_id, kind FROM spans WHERE trace_id = ? ORDER BY span_id", [trace.trace_id])
    picked = random.Random(1).sample(rows, 60)
    agents = [span for span, kind in rows if kind == "agent"][::97]
    crowded = store.query("SELECT arg_max(span_id, frame_children) FROM spans WHERE trace_id = ?", [trace.trace_id])
    return {
        "roots": frame_tree(store, trace.trace_id),
        "crowded pages": [
            frame_tree(store, trace.trace_id, span_id=crowded[0][0], offset=offset) for offset in (0, 500, 1050)
        ],
        "subtrees": [frame_tree(store, trace.trace_id, span_id=span) for span in agents],
        "paths": {span: frame_path(store, trace.trace_id, span) for span, _ in picked},
        "details": {span: span_detail(store, trace.trace_id, span) for span, _ in picked},
        "memories": {span: generation_memories(store, trace.trace_id, span) for span in agents},
    }


def test_the_pages_answer_the_same_from_the_keys(store: Store, big: GeneratedTrace) -> None:
    load_file(store, big.path)
    with store.reader() as cursor:
        assert span_keys.locate(cursor, big.trace_id, [big.orchestrator_span_id]) is None  # a small load
    scanned = answers(store, big)
    assert scanned["crowded pages"][2].nodes[0].children  # past the 1,000th child of the orchestrator's generation
    assert any(len(path) >= 4 for path in scanned["paths"].values())
    span_keys.key_run(store, big.trace_id)
    with store.reader() as cursor:
        found = span_keys.locate(cursor, big.trace_id, [big.orchestrator_span_id])
        assert found is not None
        assert found[big.orchestrator_span_id].shown
        orchestrator = found[big.orchestrator_span_id]
        assert span_keys.count(cursor, big.trace_id, big.orchestrator_span_id) == 1  # its generation
        assert span_keys.position(cursor, big.trace_id, orchestrator) == 0
    assert answers(store, big) == scanned


def test_a_bulk_load_keys_its_runs_and_a_live_batch_drops_their_keys(tmp_path: Path, big: GeneratedTrace) -> None:
    events = [orjson.loads(line) for line in big.path.read_bytes().splitlines()]
    store = Store(tmp_path / "s.duckdb")
    try:
        with store.transaction() as conn:  # a load bigger than a chunk
            relation = "(SELECT body::JSON AS body, n FROM unnest($events) WITH ORDINALITY AS batch(body, n))"
            insert_events(conn, relation, 1, {"events": [orjson.dumps(e).decode() for e in events]}, derive_spans=False)
            derive.refresh(conn, 0, chunk=5000)
        assert store.query("SELECT trace_id FROM keyed_runs") == [(big.trace_id,)]
        keyed = answers(store, big)
        last = events[-1]
        append_events(store, [{**last, "type": "sys:log", "timestamp": last["timestamp"] + 1,
                               "trace": {**last["trace"], "spanId": "feedfacefeedface"}}])  # fmt: skip
        assert store.query("SELECT count(*) FROM keyed_runs") == [(0,)]
        assert store.query("SELECT count(*) FROM span_keys") == [(0,)]
        assert answers(store, big) == keyed
    finally:
        store.close()
