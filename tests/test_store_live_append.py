"""Live ingest: a batch of events in one transaction, ids that only grow, spans that catch up."""

from __future__ import annotations

from pathlib import Path

import duckdb
import orjson
import pytest

from devtool.store import InvalidEventsError, Store, append_events, store_events
from devtool.store.event_gate import CheckedEvent, check_events, read_line
from devtool.store.live_append import stored_spans
from devtool.store.queries import events_after, frame_tree, get_run, span_detail
from tests.conftest import Trace


def test_ids_follow_the_batch_and_grow_across_batches(store: Store) -> None:
    t = Trace()
    agent = t.start("agent")
    turns = [t.start("turn", agent) for _ in range(3)]
    for turn in turns:
        t.end(turn)
    first = append_events(store, t.events[:4])
    second = append_events(store, t.events[4:])
    assert first == [1, 2, 3, 4]
    assert second == [5, 6, 7]
    assert [e.event for e in events_after(store, 0)] == t.events
    assert store.query("SELECT kind, path, events, content_hash FROM sources") == [("live", "live", 7, None)]


def test_a_running_span_completes_when_its_end_arrives(store: Store) -> None:
    t = Trace()
    agent = t.start("agent", agentId="streamer")
    turn = t.start("turn", agent)
    append_events(store, t.events)
    assert span_detail(store, t.trace_id, agent).status == "running"
    assert get_run(store, t.trace_id).status == "running"
    t.end(turn, success=True)
    t.end(agent, success=True)
    append_events(store, t.events[2:])
    assert span_detail(store, t.trace_id, agent).status == "completed"
    assert span_detail(store, t.trace_id, turn).depth == 1
    summary = get_run(store, t.trace_id)
    assert (summary.status, summary.events, summary.running) == ("completed", 4, 0)


def test_a_bad_event_is_named_by_index_and_nothing_of_the_batch_is_stored(store: Store) -> None:
    t = Trace()
    t.end(t.start("agent"))
    good = append_events(store, t.events)
    batch = [t.events[0], {**t.events[0], "timestamp": "now"}, "not an event", {**t.events[1], "type": None}]
    with pytest.raises(InvalidEventsError) as caught:
        append_events(store, batch)  # type: ignore[list-item]
    assert str(caught.value) == (
        "3 invalid events, none stored: event 1: \"timestamp\" is a string 'now', not a number of milliseconds; "
        'event 2: not a JSON object but a string; event 3: no "type"'
    )
    assert [p.element for p in caught.value.problems] == [1, 2, 3]
    assert store.query("SELECT max(event_id), count(*) FROM events") == [(good[-1], 2)]


def test_values_that_are_not_json_are_refused(store: Store) -> None:
    t = Trace()
    t.start("agent")
    with pytest.raises(InvalidEventsError, match="event 0: not JSON"):
        append_events(store, [{**t.events[0], "props": {1, 2}}])


def test_streams_are_sources_of_their_own(store: Store) -> None:
    a, b = Trace(), Trace()
    a.start("agent")
    b.start("agent")
    append_events(store, a.events, stream="http:client-1")
    append_events(store, b.events, stream="http:client-2")
    a.start("agent")
    append_events(store, a.events[1:], stream="http:client-1")
    assert store.query("SELECT path, events FROM sources ORDER BY path") == [("http:client-1", 2), ("http:client-2", 1)]


def test_an_empty_batch_is_nothing(store: Store) -> None:
    assert append_events(store, []) == []
    assert store.query("SELECT count(*) FROM sources") == [(0,)]


def test_a_parent_that_ends_later_keeps_its_children(store: Store) -> None:
    t = Trace()
    agent = t.start("agent")
    t.end(t.start("turn", agent))
    t.end(t.start("turn", agent))
    append_events(store, t.events)
    t.end(agent)
    append_events(store, t.events[-1:])  # only the agent is derived again
    (root,) = frame_tree(store, t.trace_id).nodes
    assert (root.status, root.child_count, len(root.children)) == ("completed", 2, 2)


def test_an_event_stored_already_is_not_stored_again(store: Store) -> None:
    t = Trace()
    agent = t.start("agent")
    t.start("turn", agent)
    first = append_events(store, t.events)
    t.end(agent)
    # A retry of the first batch with the new event: only the new one is stored.
    again = append_events(store, t.events)
    assert again[:2] == [None, None]
    assert again[2] is not None
    assert again[2] > max(i for i in first if i is not None)
    # The same event twice in one batch is stored once.
    u = Trace()
    u.start("agent")
    twice = append_events(store, [u.events[0], u.events[0]])
    assert twice[0] is not None
    assert twice[1] is None
    assert store.query("SELECT count(*) FROM events") == [(4,)]
    assert store.query("SELECT events FROM runs WHERE trace_id = ?", [t.trace_id]) == [(3,)]


def test_the_same_event_in_another_trace_is_another_event(store: Store) -> None:
    t = Trace()
    t.start("agent")
    other = {**t.events[0], "trace": {**t.events[0]["trace"], "traceId": "f" * 32}}
    assert None not in append_events(store, [t.events[0], other])


def test_a_followed_line_whose_fields_duckdb_reads_otherwise_is_refused_by_the_insert(store: Store) -> None:
    # orjson keeps a key's last value, DuckDB's reader its first: the gate passes `"type"` "agent:start",
    # the store reads 1. The insert of checked events still checks the rule's fields as it reads them.
    t = Trace()
    t.start("agent")
    line = orjson.dumps(t.events[0]).replace(b'{"', b'{"type":1,"', 1)
    checked = read_line(line)
    assert isinstance(checked, CheckedEvent)
    with pytest.raises(duckdb.Error, match="invalid TraceEvent"):
        store_events(store, [checked])
    assert store.query("SELECT count(*) FROM events") == [(0,)]


def test_a_batch_the_gate_wrote_stores_the_rows_of_one_read_as_json(store: Store, tmp_path: Path) -> None:
    # A written batch's rule fields are read as typed, not as JSON: the rows must not differ.
    t = Trace()
    root = t.start("agent", agentId='é"x', usage={"promptTokens": 3, "completionTokens": 4})
    turn = t.start("turn", root)
    t.end(turn, success=False, error={"message": "no"})
    t.end(root, success=True)
    t.events[1]["timestamp"] = int(t.events[1]["timestamp"])
    t.events[1]["trace"]["parentSpanId"] = root
    t.events[0]["trace"].pop("parentSpanId", None)
    t.events[3]["trace"]["parentSpanId"] = None
    written = check_events(t.events)
    assert all(checked.written for checked in written)
    store_events(store, written)
    other = Store(tmp_path / "other.duckdb")
    try:
        store_events(other, [checked._replace(written=False) for checked in written])
        rows = "SELECT * FROM events ORDER BY event_id"
        assert store.query(rows) == other.query(rows)
    finally:
        other.close()


def test_a_followed_line_in_a_batch_the_gate_wrote_is_still_checked_by_the_insert(store: Store) -> None:
    t = Trace()
    t.start("agent")
    t.start("agent")
    written = check_events(t.events[:1])
    line = read_line(orjson.dumps(t.events[1]).replace(b'{"', b'{"type":1,"', 1))
    assert isinstance(line, CheckedEvent)
    assert not line.written
    with pytest.raises(duckdb.Error, match="invalid TraceEvent"):
        store_events(store, [*written, line])
    assert store.query("SELECT count(*) FROM events") == [(0,)]


def test_the_backlog_is_told_of_each_trace_first_new_event_and_of_root_ends(store: Store) -> None:
    a, b = Trace(), Trace()
    root = a.start("agent")
    a.end(a.start("turn", root))
    b.start("agent")
    ids = store_events(store, check_events([*a.events, *b.events]), derive=False)
    a.end(root)
    later = store_events(store, check_events(a.events[-1:]), derive=False)
    assert store.backlog.take() == {a.trace_id: ids[0], b.trace_id: ids[3]}
    assert later[0] is not None
    assert store.backlog.ends_root(a.trace_id)
    assert not store.backlog.ends_root(b.trace_id)


def test_a_retry_by_another_stream_stores_nothing_and_adds_no_source(store: Store) -> None:
    t = Trace()
    t.end(t.start("agent"))
    first = append_events(store, t.events, stream="exporter-1")
    assert append_events(store, t.events, stream="exporter-2") == [None, None]
    assert store.query("SELECT path, events FROM sources") == [("exporter-1", 2)]
    # A batch of a retried event and a new one: the new one's id follows the stored ones.
    t.end(t.start("turn", t.events[0]["trace"]["spanId"]))
    mixed = append_events(store, t.events, stream="exporter-2")
    assert mixed[:2] == [None, None]
    assert None not in mixed[2:]
    assert min(i or 0 for i in mixed[2:]) > max(i or 0 for i in first)
    assert store.query("SELECT path, events FROM sources ORDER BY path") == [("exporter-1", 2), ("exporter-2", 2)]


def test_stored_spans_are_found_derived_or_not_and_from_each_runs_first_event_on(store: Store) -> None:
    a, b = Trace(), Trace()
    early = a.start("agent")
    append_events(store, a.events)  # derived: a run with its first event
    late = b.start("agent")
    b.end(b.start("turn", late))
    store_events(store, check_events(b.events), derive=False)  # no run yet: the backlog's
    asked = [(a.trace_id, early), (b.trace_id, late), (b.trace_id, "0" * 16), ("f" * 32, early)]
    assert stored_spans(store, asked) == {(a.trace_id, early), (b.trace_id, late)}
    store.derive_backlog()
    assert stored_spans(store, asked) == {(a.trace_id, early), (b.trace_id, late)}
    # Only events from the traces' first on are read: a trace's events before its run's first are not its.
    with store.transaction() as conn:
        conn.execute("UPDATE runs SET first_event_id = 10**6 WHERE trace_id = ?", [a.trace_id])
    assert stored_spans(store, asked) == {(b.trace_id, late)}
    assert stored_spans(store, []) == set()
