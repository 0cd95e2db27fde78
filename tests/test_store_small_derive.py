"""A small trace stored whole by the live appender is derived in its append's own transaction
(`live_append.store_batch`, issue 43): visible once the append returns, exactly once, its words and
call fingerprints left to the index step, and what does not qualify left to the backlog as before."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
from starlette.testclient import TestClient

from devtool.store import Store, append_events, store_batch
from devtool.store.event_gate import check_events
from devtool.store.queries import get_run
from devtool.web import create_app
from devtool.web.settings import Settings
from tests.conftest import Trace, running_run
from tests.otlp_factory import request, span, span_id
from tests.test_store_backlog import called_run, index_rows
from tests.test_web_live_settled import waited

SMALL = 64


def whole_run() -> Trace:
    t, agent = called_run()
    t.end(agent, result={"verdict": "escalate"})
    return t


def summary(store: Store, trace_id: str) -> tuple[object, ...]:
    run = store.query(
        "SELECT events, spans, status, name, first_event_id, last_event_id, agents, depth FROM runs WHERE trace_id = ?",
        [trace_id],
    )[0]
    spans = store.query(
        "SELECT span_id, parent_span_id, kind, name, status, depth, frame_parent_id, frame_children, events "
        "FROM spans WHERE trace_id = ? ORDER BY span_id",
        [trace_id],
    )
    return *run, spans


def test_a_small_whole_trace_is_visible_when_its_append_returns_as_a_derive_would_make_it(
    store: Store, tmp_path: Path
) -> None:
    t = whole_run()
    stored = store_batch(store, check_events(t.events), stream="otlp", derive_small=SMALL)
    assert stored.ids == [1, 2, 3, 4]
    assert stored.derived == (4, (t.trace_id,))
    assert not store.backlog  # nothing left for a page to wait for
    assert store.unindexed.holds(t.trace_id)  # its words and prints: the index step after it
    assert index_rows(store, t.trace_id) == ([], [], 1)
    assert store.index_backlog()
    other = Store(tmp_path / "other.duckdb")
    try:
        append_events(other, t.events, stream="otlp")  # stored, then derived and indexed apart
        assert summary(store, t.trace_id) == summary(other, t.trace_id)
        assert summary(store, t.trace_id)[:3] == (4, 2, "completed")
        assert index_rows(store, t.trace_id) == index_rows(other, t.trace_id)
    finally:
        other.close()


def test_the_same_trace_sent_again_is_stored_and_derived_once(store: Store) -> None:
    t = whole_run()
    store_batch(store, check_events(t.events), stream="otlp", derive_small=SMALL)
    before = summary(store, t.trace_id)
    again = store_batch(store, check_events(t.events), stream="otlp", derive_small=SMALL)
    assert again.ids == [None] * 4
    assert again.derived is None
    assert not store.backlog
    assert summary(store, t.trace_id) == before
    assert store.query("SELECT count(*) FROM events")[0][0] == 4


def test_a_running_run_a_big_batch_and_a_run_a_derive_holds_are_left_to_the_backlog(store: Store) -> None:
    running, _ = running_run(2)  # its root has not ended
    assert store_batch(store, check_events(running.events), derive_small=SMALL).derived is None
    assert store.backlog.holds(running.trace_id)

    big = whole_run()
    assert store_batch(store, check_events(big.events), derive_small=3).derived is None  # 4 events over 3
    assert store.backlog.holds(big.trace_id)

    # The root's end of a run whose earlier events wait in the backlog: the derive that takes those
    # derives this too (one derive a run at a time).
    t, agent = called_run()
    store_batch(store, check_events(t.events), derive_small=SMALL)
    t.end(agent)
    assert store_batch(store, check_events(t.events[-1:]), derive_small=SMALL).derived is None
    assert store.backlog.holds(t.trace_id)
    store.derive_backlog()
    assert get_run(store, t.trace_id).status == "completed"
    assert get_run(store, running.trace_id).status == "running"


def test_a_process_stopped_before_the_index_step_of_a_small_trace_leaves_it_to_the_next_open(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    t = whole_run()
    first = Store(path)
    store_batch(first, check_events(t.events), stream="otlp", derive_small=SMALL)
    first.close()  # stopped before its index step
    again = Store(path)
    fresh = Store(tmp_path / "fresh.duckdb")
    try:
        assert not again.unindexed  # opening indexed it
        append_events(fresh, t.events, stream="otlp")
        assert index_rows(again, t.trace_id) == index_rows(fresh, t.trace_id)
        assert summary(again, t.trace_id) == summary(fresh, t.trace_id)
    finally:
        fresh.close()
        again.close()


def test_an_exported_small_trace_is_whole_on_its_header_without_a_derive_to_wait_for(store: Store) -> None:
    root, trace = span_id(), "7" * 32
    body = request(
        span("chat gpt", {"gen_ai.operation.name": "chat"}, trace=trace, parent=root, start_ms=1, duration_ms=5),
        span("invoke_agent clerk", {"gen_ai.operation.name": "invoke_agent"}, trace=trace, sid=root),
    )
    # Derives follow appends at most once a minute: none runs behind the test's back.
    with TestClient(create_app(store, Settings(live_interval=60))) as client:
        answer = client.post("/v1/traces", content=orjson.dumps(body), headers={"content-type": "application/json"})
        assert answer.status_code == 200, answer.text
        assert not store.backlog  # derived with its events
        header = client.get(f"/runs/{trace}/header", headers={"HX-Request": "true"})
    assert header.status_code == 200
    assert not waited(header)
    assert "s-completed" in header.text
    assert re.search(r"<dt>spans</dt><dd>2</dd>", header.text)
