"""Live appends that leave their spans and run summary for later: the backlog, its derive, and what a
process that stopped in between leaves behind (opening the store derives it)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from devtool.store import NotFoundError, Store, append_events, derive, load_file
from devtool.store.queries import get_run, last_event_id
from tests.conftest import Trace, running_run


def test_an_append_that_does_not_derive_stores_its_events_and_leaves_the_run_to_the_backlog(store: Store) -> None:
    t, _ = running_run(2)
    ids = append_events(store, t.events, derive=False)
    assert ids == [1, 2, 3, 4, 5]
    assert last_event_id(store) == 5
    assert store.backlog.holds(t.trace_id)
    with pytest.raises(NotFoundError):
        get_run(store, t.trace_id)

    assert store.derive_backlog() == (5, (t.trace_id,))
    assert not store.backlog.holds(t.trace_id)
    run = get_run(store, t.trace_id)
    assert (run.events, run.spans, run.status) == (5, 3, "running")
    assert store.derive_backlog() is None


def test_the_backlog_knows_which_runs_pending_events_end_a_root_span(store: Store) -> None:
    t, root = running_run(1)
    append_events(store, t.events)
    append_events(store, t.span("turn", root), derive=False)
    assert store.backlog.holds(t.trace_id)
    assert not store.backlog.ends_root(t.trace_id)  # a turn's end is not its root's
    t.end(root)
    append_events(store, t.events[-1:], derive=False)
    assert store.backlog.ends_root(t.trace_id)
    store.derive_backlog()
    assert not store.backlog.ends_root(t.trace_id)


def test_later_appends_to_a_derived_run_are_derived_together(store: Store) -> None:
    t, root = running_run(1)
    append_events(store, t.events)
    for _ in range(3):
        append_events(store, t.span("turn", root), derive=False)
    assert get_run(store, t.trace_id).events == 3  # the summary as of the first, derived append
    t.end(root)
    append_events(store, t.events[-1:], derive=False)
    assert store.derive_backlog() == (len(t.events), (t.trace_id,))
    run = get_run(store, t.trace_id)
    assert (run.events, run.spans, run.status) == (len(t.events), 5, "completed")


def test_a_load_while_live_events_wait_derives_only_its_own_and_leaves_them_waiting(
    store: Store, tmp_path: Path
) -> None:
    live, _ = running_run(1)
    append_events(store, live.events, derive=False)
    loaded, root = running_run(2)
    loaded.end(root)
    assert load_file(store, loaded.write(tmp_path / "run.jsonl")).events == 6
    assert get_run(store, loaded.trace_id).status == "completed"
    assert store.backlog.holds(live.trace_id)
    assert store.derive_backlog() == (9, (live.trace_id,))
    assert get_run(store, live.trace_id).events == 3


def test_opening_a_store_derives_what_a_stopped_process_left_underived(tmp_path: Path) -> None:
    path = tmp_path / "devtool.duckdb"
    first, root = running_run(1)
    second, _ = running_run(1)
    store = Store(path)
    append_events(store, first.events)
    first.end(root)
    append_events(store, first.events[-1:], derive=False)
    append_events(store, second.events, derive=False)
    store.close()  # as a process killed between its appends and their derive leaves the file

    reopened = Store(path)
    try:
        assert not reopened.backlog
        assert (get_run(reopened, first.trace_id).events, get_run(reopened, first.trace_id).status) == (4, "completed")
        assert get_run(reopened, second.trace_id).events == 3
    finally:
        reopened.close()


def test_a_derive_that_fails_puts_what_it_took_back(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    t, _ = running_run(1)
    append_events(store, t.events, derive=False)

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(derive, "refresh", broken)
    with pytest.raises(RuntimeError, match="disk on fire"):
        store.derive_backlog()
    assert store.backlog.holds(t.trace_id)
    monkeypatch.undo()
    assert store.derive_backlog() == (3, (t.trace_id,))
    assert get_run(store, t.trace_id).events == 3


def summaries(store: Store) -> list[tuple[object, ...]]:
    runs = store.query("SELECT trace_id, name, status, events, spans, running, first_event_id, last_event_id FROM runs")
    spans = store.query(
        "SELECT trace_id, span_id, kind, status, events, depth, frame_parent_id, frame_children FROM spans"
    )
    return sorted(runs) + sorted(spans)


def test_one_run_derived_alone_leaves_the_others_pending_below_it_and_each_event_is_derived_once(
    store: Store, tmp_path: Path
) -> None:
    a, a_root = running_run(1)
    b, b_root = running_run(1)
    append_events(store, a.events, derive=False)  # ids 1-3, pending
    append_events(store, b.events, derive=False)  # ids 4-6
    # B alone: every event up to 3 is derived (none), not up to 6; A stays pending.
    assert store.derive_backlog(b.trace_id) == (0, (b.trace_id,))
    assert store.backlog.holds(a.trace_id)
    assert not store.backlog.holds(b.trace_id)
    assert get_run(store, b.trace_id).events == 3
    with pytest.raises(NotFoundError):
        get_run(store, a.trace_id)
    assert store.derive_backlog(b.trace_id) is None  # nothing of B left
    # More of B, then everything: A's from 1, B's from its new ones (its first three not again).
    append_events(store, b.span("turn", b_root), derive=False)
    b.end(b_root)
    a.end(a_root)
    append_events(store, [b.events[-1], a.events[-1]], derive=False)
    assert store.derive_backlog() == (10, tuple(sorted((a.trace_id, b.trace_id))))
    assert not store.backlog

    # The same events appended in the same order, each derived as it comes.
    other = Store(tmp_path / "other.duckdb")
    try:
        append_events(other, a.events[:3])
        append_events(other, b.events[:3])
        append_events(other, b.events[3:5])
        append_events(other, [b.events[-1], a.events[-1]])
        assert summaries(store) == summaries(other)
    finally:
        other.close()


def test_a_run_is_derived_beside_a_derive_in_flight_that_does_not_hold_it(store: Store) -> None:
    a, _ = running_run(1)
    b, _ = running_run(1)
    append_events(store, a.events, derive=False)  # ids 1-3
    append_events(store, b.events, derive=False)  # ids 4-6
    held = store.backlog.take(only=a.trace_id)
    found: list[object] = []
    # A derive in flight (the one that follows the appends) holds A and the derive lock: B's derive
    # does not wait for it (taking that lock here would never return), and A stays below what it says.
    with store._derive_lock:
        alone = threading.Thread(target=lambda: found.append(store.derive_backlog(b.trace_id)))
        alone.start()
        alone.join(timeout=120)
    assert found == [(0, (b.trace_id,))]
    assert get_run(store, b.trace_id).events == 3
    assert store.backlog.holds(a.trace_id)
    assert store.derive_backlog(a.trace_id) is None  # A is held by that derive: it is not taken again
    store.backlog.put_back(held)
    assert store.derive_backlog() == (6, (a.trace_id,))
    assert get_run(store, a.trace_id).events == 3


def index_rows(store: Store, trace_id: str) -> tuple[list[str], list[tuple[object, ...]], int]:
    """A run's words, call fingerprints and `unindexed` rows."""
    words = [r[0] for r in store.query("SELECT term FROM search_terms WHERE trace_id = ? ORDER BY 1", [trace_id])]
    prints = store.query(
        "SELECT call_id, pos, event_id, idx, h_in, h_out, h_err, h_mem, served FROM call_prints WHERE trace_id = ? "
        "ORDER BY call_id",
        [trace_id],
    )
    left = store.query("SELECT count(*) FROM unindexed WHERE trace_id = ?", [trace_id])[0][0]
    return words, prints, int(left)


def called_run() -> tuple[Trace, str]:
    """A run whose agent has made a model call, still running: the trace and its agent."""
    t = Trace()
    agent = t.start("agent", agentId="clerk", callId="root/agent:clerk:0", props={"topic": "ledgers"})
    turn = t.start("turn", agent, callId="root/agent:clerk:0/turn:0", step=0, messages=[{"content": "März"}])
    t.end(turn, success=True, message={"role": "assistant", "content": "Looked at batch7"})
    return t, agent


def test_a_derive_for_a_page_leaves_the_runs_words_and_prints_to_the_index_step(store: Store, tmp_path: Path) -> None:
    t, _ = called_run()
    append_events(store, t.events, derive=False)
    store.derive_backlog(t.trace_id)  # a page of the run: visible, not indexed
    assert get_run(store, t.trace_id).events == 3
    assert index_rows(store, t.trace_id) == ([], [], 1)
    assert store.unindexed.holds(t.trace_id)
    assert store.index_backlog()
    assert not store.unindexed
    assert not store.index_backlog()
    words, prints, left = index_rows(store, t.trace_id)
    # The same words and prints as a store that made them in its derive (an append that derives).
    other = Store(tmp_path / "other.duckdb")
    try:
        append_events(other, t.events)
        assert (words, prints, left) == index_rows(other, t.trace_id)
        assert {"batch7", "märz", "ledgers"} <= set(words)
        assert len(prints) == 1
        assert left == 0
    finally:
        other.close()


def test_a_process_stopped_between_a_derive_and_its_index_step_leaves_it_to_the_next_open(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    t, agent = called_run()
    t.end(agent, result={"verdict": "escalate"})
    first = Store(path)
    append_events(first, t.events[:3])  # derived and indexed
    append_events(first, t.events[3:], derive=False)
    first.derive_backlog(behind=True)  # the derive that follows the appends: the index step is next
    assert index_rows(first, t.trace_id)[2] == 1
    first.close()  # stopped before it
    again = Store(path)
    try:
        assert not again.unindexed
        fresh = Store(tmp_path / "fresh.duckdb")
        try:
            append_events(fresh, t.events)
            assert index_rows(again, t.trace_id) == index_rows(fresh, t.trace_id)
            assert "escalate" in index_rows(again, t.trace_id)[0]
        finally:
            fresh.close()
    finally:
        again.close()
