"""Compare from each run's stored call fingerprints (`store.call_prints`): the same answer as from the
runs' events, for a run loaded from a file, a run appended live through the server, a replay made
by the DevTool, and runs stored before the fingerprints were (an older store)."""

from __future__ import annotations

import asyncio
from contextlib import closing
from pathlib import Path
from typing import Any

import duckdb
import orjson
import pytest
from starlette.testclient import TestClient

from devtool.actions import compare as compare_module
from devtool.actions.compare import Comparison, summary_json
from devtool.core import MemorySink, run_with
from devtool.core.debugger import fork_snapshot, restore_snapshot
from devtool.store import Store, append_events, save_snapshot
from devtool.store.call_prints import POS_STEP, split
from devtool.store.print_older import print_run, runs_to_print
from devtool.web import create_app
from tests.test_actions_compare import TOOL, program
from tests.test_store_database import old_store
from tests.web_runs import record

RESEARCHER = "root/agent:lead:0/agent:researcher:0"
JSON = {"content-type": "application/json"}


def events_of(fn: Any) -> list[dict[str, Any]]:
    sink = MemorySink()
    asyncio.run(run_with(fn, sinks=[sink]))
    return [dict(event) for event in sink.events]


def printed(store: Store, a: str, b: str) -> bool:
    with closing(store.reader()) as cursor:
        return split(cursor, a, b) is not None


def compared(store: Store, a: str, b: str) -> Comparison:
    return compare_module._compared.__wrapped__(store, a, b)  # not the kept answer: compared now


def from_events(store: Store, a: str, b: str) -> Comparison:
    """The comparison read from the runs' events, as an unprinted run's is (and every run's was)."""
    with store.transaction() as conn:
        conn.execute("DELETE FROM printed_runs WHERE trace_id IN (?, ?)", [a, b])
    assert not printed(store, a, b)
    return compared(store, a, b)


def shape(comparison: Comparison) -> tuple[Any, ...]:
    """What a reader is told: the differing calls in order with their fields and values' places, the
    counts, how B served its calls, every call of a small run (not the numbers that order them)."""
    differences = [(d.call_id, d.fields, d.a, d.b) for d in comparison.differences]
    return differences, comparison.differing, comparison.total, comparison.served_b, comparison.calls


def test_runs_loaded_from_files_compare_from_their_fingerprints(store: Store, tmp_path: Path) -> None:
    a = record(store, tmp_path, program("cats sleep all day"), name="a")
    b = record(store, tmp_path, program("cats hunt all night"), name="b")
    assert printed(store, a, b)
    prints = compared(store, a, b)
    assert prints.first is not None
    assert (prints.first.call_id, prints.first.field) == (TOOL, "output")
    assert {RESEARCHER, "root/agent:lead:0", "root"} <= {d.call_id for d in prints.differences}
    answer = summary_json(store, prints)
    events = from_events(store, a, b)
    assert shape(prints) == shape(events)
    assert summary_json(store, events) == answer


def test_a_run_appended_live_through_the_server_compares_from_its_fingerprints(store: Store, tmp_path: Path) -> None:
    a = record(store, tmp_path, program("cats sleep all day"), name="a")
    live = events_of(program("cats hunt all night"))
    b = live[0]["trace"]["traceId"]
    with TestClient(create_app(store)) as client:
        for event in live:  # one event a batch: each call's end, and its generations, come in a batch of their own
            answer = client.post(
                "/api/v1/traces", content=orjson.dumps([event]), headers={"content-type": "application/json"}
            )
            assert answer.status_code == 200, answer.text
            store.derive_backlog()
        prints = compared(store, a, b)
        assert printed(store, a, b)
        assert prints.first is not None
        assert (prints.first.call_id, prints.first.field) == (TOOL, "output")
        researcher = next(d for d in prints.differences if d.call_id == RESEARCHER)
        assert set(researcher.fields) == {"output", "memory"}
        assert shape(prints) == shape(from_events(store, a, b))


def test_a_replay_of_a_fork_compares_from_its_fingerprints(store: Store, tmp_path: Path) -> None:
    original = record(store, tmp_path, program("cats sleep all day"), name="original")
    parent = dict(restore_snapshot(events_of(program("cats sleep all day"))))
    parent_id = save_snapshot(store, parent)
    fork = dict(fork_snapshot(parent, parent=parent_id, outputs={TOOL: {"text": "dogs bark"}}))
    fork_id = save_snapshot(store, fork, parent_id=parent_id)
    metadata = {"replay": {"snapshotId": fork_id, "originalTraceId": original}}
    replay = record(store, tmp_path, program("cats sleep all day"), name="replay", snapshot=fork, metadata=metadata)
    assert printed(store, original, replay)
    prints = compared(store, original, replay)
    assert prints.first is not None
    assert (prints.first.call_id, prints.first.field) == (TOOL, "output")
    cached, _ = prints.served_b
    assert cached >= 1  # the edited tool output was served from the fork's journal
    assert shape(prints) == shape(from_events(store, original, replay))


def test_runs_stored_before_the_fingerprints_compare_from_their_events(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = events_of(program("cats sleep all day")), events_of(program("cats hunt all night"))
    a, b = first[0]["trace"]["traceId"], second[0]["trace"]["traceId"]
    store = Store(old_store(tmp_path, monkeypatch, 11, first + second[:-3]))
    try:
        assert not printed(store, a, b)
        assert set(runs_to_print(store, min_events=1)) == {a, b}
        before = compared(store, a, b)
        assert before.first is not None
        assert (before.first.call_id, before.first.field) == (TOOL, "output")
        # Its last events, appended now: the run stays unprinted (its calls before were never printed).
        append_events(store, second[-3:])
        assert not printed(store, a, b)
        after = compared(store, a, b)
        assert after.first is not None
        assert (after.first.call_id, after.first.field) == (TOOL, "output")
        assert "root/agent:lead:0" in {d.call_id for d in after.differences}
        # The server's background indexer prints them: then the same answer from their fingerprints.
        assert print_run(store, a)
        assert print_run(store, b)
        assert printed(store, a, b)
        assert shape(compared(store, a, b)) == shape(after)
        fresh = Store(tmp_path / "fresh.duckdb")  # the same runs stored by today's code: printed
        try:
            append_events(fresh, first + second)
            assert printed(fresh, a, b)
            assert shape(compared(fresh, a, b)) == shape(after)
        finally:
            fresh.close()
    finally:
        store.close()


def test_migration_14_places_calls_printed_before_by_where_their_ends_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events = events_of(program("cats sleep all day"))
    path = old_store(tmp_path, monkeypatch, 13, events)
    with duckdb.connect(str(path)) as conn:
        trace, first = conn.execute("SELECT trace_id, first_event_id FROM runs").fetchall()[0]
        # Printed then as a count of the run's calls: a tool call of a batch, then the frame ending after it.
        conn.execute(
            "INSERT INTO call_prints VALUES (?, 0, 'root/tool:a:0', 1, ?, 2, -1, 0, 0, 0, 0, 1), "
            "(?, 0, 'root', 2, ?, -1, -1, 0, 0, 0, 0, 0)",
            [trace, first + 4, trace, first + 9],
        )
    store = Store(path)
    try:
        assert store.query("SELECT call_id, pos FROM call_prints ORDER BY pos") == [
            ("root/tool:a:0", 4 * POS_STEP + 4),
            ("root", 9 * POS_STEP + 1),
        ]
    finally:
        store.close()
