"""A small batch of traces new to the store is inserted without looking for its events among the
stored ones (`live_append._store`'s `fresh`, issue 43), and a bigger one looks for them in a list of
the stored keys of its window when they are few (`listed`), else by the anti-join: exactly once still
holds wherever a trace's events may already be (a run derived, the backlog, a file loaded, a store
reopened, a derive in flight, a retried or doubled export over HTTP, a batch that shares a trace with
the one before it)."""

from __future__ import annotations

import threading
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import orjson
import pytest

from devtool.store import Store, load_file, store_batch, store_events
from devtool.store.event_gate import CheckedEvent, check_events
from devtool.store.live_append import STORED_KEYS
from testkit.served import serving
from tests.conftest import Trace
from tests.otlp_factory import request, span, span_id
from tests.test_store_backlog import called_run

SMALL = 64


def counts(store: Store, trace_id: str) -> tuple[int, int]:
    """The trace's events stored, and its run's count of them (0: no run)."""
    stored = store.query("SELECT count(*) FROM events WHERE trace_id = ?", [trace_id])[0][0]
    run = store.query("SELECT events FROM runs WHERE trace_id = ?", [trace_id])
    return stored, run[0][0] if run else 0


def small(store: Store, events: list[CheckedEvent]) -> list[int | None]:
    return store_batch(store, events, stream="otlp", derive_small=SMALL).ids


def test_a_batch_again_stores_nothing_while_its_trace_waits_in_the_backlog_and_once_derived(store: Store) -> None:
    t, _ = called_run()  # its root has not ended: left to the backlog
    events = check_events(t.events)
    first = small(store, [events[0], events[0], *events[1:]])  # a repeat inside the batch: once
    assert first[1] is None
    assert None not in (first[0], *first[2:])
    assert store.backlog.holds(t.trace_id)
    assert small(store, events) == [None] * 3  # held: looked for among the stored
    store.derive_backlog()
    assert not store.backlog.holds(t.trace_id)
    assert small(store, events) == [None] * 3  # a run: looked for among the stored
    assert counts(store, t.trace_id) == (3, 3)


def test_a_trace_loaded_from_a_file_or_left_underived_by_a_stopped_process_is_not_stored_again(
    tmp_path: Path,
) -> None:
    loaded, underived = Trace(), Trace()
    loaded.end(loaded.start("agent"))
    underived.end(underived.start("agent"))
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"".join(orjson.dumps(event) + b"\n" for event in loaded.events))
    first = Store(tmp_path / "s.duckdb")
    load_file(first, path)
    store_events(first, check_events(underived.events), derive=False)
    first.close()  # stopped before its derive: opening the store again derives it
    again = Store(tmp_path / "s.duckdb")
    try:
        assert small(again, check_events(loaded.events)) == [None, None]
        assert small(again, check_events(underived.events)) == [None, None]
        assert counts(again, loaded.trace_id) == (2, 2)
        assert counts(again, underived.trace_id) == (2, 2)
    finally:
        again.close()


def test_the_same_batch_at_once_from_many_threads_is_stored_once(store: Store) -> None:
    for _ in range(5):
        whole, running = Trace(), Trace()
        whole.end(whole.start("agent"))  # derived in its append
        running.start("agent")  # left to the backlog
        batches = [check_events(whole.events), check_events(running.events)] * 4
        start = threading.Barrier(len(batches))

        def post(events: list[CheckedEvent], start: threading.Barrier = start) -> list[int | None]:
            start.wait()
            return small(store, events)

        with ThreadPoolExecutor(len(batches)) as pool:
            results = list(pool.map(post, batches))
        assert sum(i is not None for ids in results for i in ids) == 3
        store.derive_backlog()
        assert counts(store, whole.trace_id) == (2, 2)
        assert counts(store, running.trace_id) == (1, 1)


def test_a_batch_again_while_its_trace_is_derived_stores_nothing(store: Store) -> None:
    """A derive that commits beside the append: the append either sees its run or its trace held."""
    for _ in range(10):
        t, _ = called_run()
        events = check_events(t.events)
        small(store, events)  # its root has not ended: the backlog's
        with ThreadPoolExecutor(2) as pool:
            derived = pool.submit(store.derive_backlog)
            again = pool.submit(small, store, events)
            derived.result()
            assert again.result() == [None] * 3
        store.derive_backlog()
        assert counts(store, t.trace_id) == (3, 3)


def test_an_export_posted_at_once_many_times_and_again_after_is_stored_once(tmp_path: Path) -> None:
    root, trace = span_id(), "5" * 32
    child = span("chat gpt", {"gen_ai.operation.name": "chat"}, trace=trace, parent=root, start_ms=1, duration_ms=5)
    agent = span("invoke_agent clerk", {"gen_ai.operation.name": "invoke_agent"}, trace=trace, sid=root)
    whole = orjson.dumps(request(child, agent))
    early = orjson.dumps(request(child))  # the child alone, sent before its root ends
    with serving(tmp_path / "s.duckdb", log=tmp_path / "serve.log") as server:

        def post(body: bytes) -> int:
            asked = urllib.request.Request(
                f"{server.url}v1/traces", data=body, headers={"Content-Type": "application/json"}, method="POST"
            )
            with urllib.request.urlopen(asked, timeout=30) as answer:
                return int(answer.status)

        with ThreadPoolExecutor(4) as pool:
            assert list(pool.map(post, [early] * 4)) == [200] * 4
            assert list(pool.map(post, [whole] * 4)) == [200] * 4
        assert post(whole) == 200
    store = Store(tmp_path / "s.duckdb")
    try:
        assert counts(store, trace) == (4, 4)
    finally:
        store.close()


@pytest.mark.parametrize("stored", [0, 10, STORED_KEYS, STORED_KEYS + 1])
def test_a_bigger_batch_stores_only_what_its_window_does_not_hold_listed_or_joined(store: Store, stored: int) -> None:
    """A batch over the small size whose first `stored` events are stored already (the events its window
    holds: none, fewer than `STORED_KEYS`, as many, one more, checked by the anti-join): those are not
    stored again, the others are, in order; the same batch again stores nothing."""
    t = Trace()
    root = t.start("agent")
    for _ in range(STORED_KEYS):
        t.span("turn", root)
    t.end(root)
    other = Trace()  # a trace of its own in the same batch, none of it stored
    other.span("agent")
    events = check_events(t.events)
    store_events(store, events[:stored], derive=False)
    ids = store_events(store, [*events, *check_events(other.events)], derive=False)
    assert ids[:stored] == [None] * stored
    new = ids[stored:]
    assert None not in new
    assert new == sorted(set(new))  # in the batch's order, each its own id
    assert store_events(store, events, derive=False) == [None] * len(events)
    store.derive_backlog()
    assert counts(store, t.trace_id) == (len(events), len(events))
    assert counts(store, other.trace_id) == (2, 2)
