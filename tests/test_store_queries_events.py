"""Events as loaded: of a span, of a run in order with a cut pushed down to DuckDB, after an id."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from devtool.core import RestoreError
from devtool.core.debugger import restore_snapshot
from devtool.core.restore import IGNORED_TYPES, UNREAD_FIELDS
from devtool.store import NotFoundError, Store, append_events, load_file
from devtool.store.queries import Cut, events_after, iter_run_events, last_event_id, run_events, span_events
from tests.conftest import CORPUS, Trace

SCENARIOS = ["simple", "nested", "failure", "zombie", "repeated-tool"]


def restores(scenario: str) -> list[tuple[str, str]]:
    meta = json.loads((CORPUS / "rejelly" / f"{scenario}.meta.json").read_text())
    return [
        (r["options"]["spanId"], r["options"]["anchor"])
        for r in meta["restores"]
        if r["ok"] and r["options"] and not r["label"].startswith("probe")
    ]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_cut_run_restores_as_the_whole_trace_does(store: Store, scenario: str) -> None:
    path = CORPUS / "rejelly" / f"{scenario}.trace.jsonl"
    events = [json.loads(line) for line in path.read_text().splitlines()]
    load_file(store, path)
    trace_id = events[0]["trace"]["traceId"]
    sizes = []
    for span_id, anchor in restores(scenario):
        cut = run_events(store, trace_id, cut=Cut(span_id, anchor))
        sizes.append(len(cut))
        expected = restore_snapshot(events, span_id=span_id, anchor=anchor)
        assert restore_snapshot(cut, span_id=span_id, anchor=anchor) == expected, (span_id, anchor)
    assert min(sizes) < len(events)


def ties() -> Trace:
    """Events that share timestamps, as integer-millisecond clocks make them."""
    t = Trace()
    at = t.now
    agent = t.start("agent", at=at)
    turn = t.start("turn", agent, at=at)
    t.end(turn, at=at)
    tools = t.start("tools:execute", agent, at=at)
    t.end(tools, at=at + 1)
    t.end(agent, at=at + 1)
    return t


def test_equal_timestamps_keep_load_order(store: Store) -> None:
    t = ties()
    append_events(store, t.events)
    assert run_events(store, t.trace_id) == t.events


def test_the_cut_includes_its_boundary_event(store: Store) -> None:
    t = ties()
    append_events(store, t.events)
    turn = t.events[1]["trace"]["spanId"]
    assert run_events(store, t.trace_id, cut=Cut(turn, "after")) == t.events[:3]
    assert run_events(store, t.trace_id, cut=Cut(turn, "before")) == t.events[:2]
    assert run_events(store, t.trace_id, cut=Cut("no-such-span")) == t.events  # restore will say what is wrong


def test_types_are_filtered_in_the_query(store: Store) -> None:
    t = ties()
    append_events(store, t.events)
    kept = run_events(store, t.trace_id, types=["agent:start", "agent:end"])
    assert [e["type"] for e in kept] == ["agent:start", "agent:end"]


def test_skipped_types_are_left_out_but_never_the_cut_event(store: Store) -> None:
    t = ties()
    append_events(store, t.events)
    turn = t.events[1]["trace"]["spanId"]
    kept = run_events(store, t.trace_id, skip_types=["turn:start", "turn:end"])
    assert [e["type"] for e in kept] == ["agent:start", "tools:execute:start", "tools:execute:end", "agent:end"]
    before = run_events(store, t.trace_id, cut=Cut(turn, "before"), skip_types=["turn:start"])
    assert [e["type"] for e in before] == ["agent:start", "turn:start"]
    only = run_events(store, t.trace_id, cut=Cut(turn, "after"), types=["agent:start"])
    assert [e["type"] for e in only] == ["agent:start", "turn:end"]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_restore_without_the_types_and_fields_it_ignores_is_the_same(store: Store, scenario: str) -> None:
    path = CORPUS / "rejelly" / f"{scenario}.trace.jsonl"
    load_file(store, path)
    events = [json.loads(line) for line in path.read_text().splitlines()]
    trace_id = events[0]["trace"]["traceId"]
    spans = {e["trace"]["spanId"] for e in events if e["type"].endswith(":start")}
    checked = 0
    for span_id in sorted(spans):
        for anchor in ("before", "after"):
            cut = Cut(span_id, anchor)
            try:
                expected = restore_snapshot(events, span_id=span_id, anchor=anchor)
            except RestoreError:
                continue
            slim = run_events(store, trace_id, cut=cut, skip_types=IGNORED_TYPES, drop_fields=UNREAD_FIELDS)
            assert not any(UNREAD_FIELDS & event.keys() for event in slim)
            assert restore_snapshot(slim, span_id=span_id, anchor=anchor) == expected, (span_id, anchor)
            checked += 1
    assert checked > 0


def test_a_long_run_streams_in_batches(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    from devtool.store.queries import events as module

    monkeypatch.setattr(module, "BATCH", 7)
    t = Trace()
    for _ in range(20):
        t.end(t.start("turn"))
    append_events(store, t.events)
    assert list(iter_run_events(store, t.trace_id)) == t.events


def test_unknown_runs(store: Store) -> None:
    with pytest.raises(NotFoundError):
        run_events(store, "nope")


def test_the_events_of_a_span_and_its_instants(store: Store) -> None:
    t = Trace()
    call = t.start("model:call")
    t.point("budget:update", call, delta={"totalTokens": 3})
    t.point("sys:log", "", span=call, message="slow")
    t.end(call)
    t.end(t.start("model:call"))
    append_events(store, t.events)
    found = span_events(store, t.trace_id, call)
    assert [e.type for e in found] == ["model:call:start", "budget:update", "sys:log", "model:call:end"]
    assert found[1].event == t.events[1]
    assert [e.type for e in span_events(store, t.trace_id, call, limit=2, offset=1)] == ["budget:update", "sys:log"]


def test_events_after_an_id_resume_a_stream(store: Store, tmp_path: Path) -> None:
    assert last_event_id(store) == 0
    first, second = Trace(), Trace()
    for t in (first, second):
        t.end(t.start("turn"))
    ids = append_events(store, first.events) + append_events(store, second.events)
    assert last_event_id(store) == ids[-1]
    after = events_after(store, ids[0])
    assert [e.event_id for e in after] == ids[1:]
    assert [e.event for e in events_after(store, ids[0], trace_id=second.trace_id)] == second.events
    assert events_after(store, ids[-1]) == []
    assert [e.event_id for e in events_after(store, 0, limit=2)] == ids[:2]
