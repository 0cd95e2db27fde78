"""The lake in-process: two real stores on one DuckLake (a real PostgreSQL catalog, a data folder),
publishing exactly once, listing and opening each other's runs and snapshots, compacting."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from devtool.store import Store, append_events, get_snapshot, load_file, save_snapshot
from devtool.store.lake import (
    Lake,
    Opening,
    attach_lake,
    compact,
    finish_open,
    lake_config,
    open_head,
    open_run,
    open_snapshot,
    open_span,
    opening,
    publish_run,
    publish_runs,
    publish_snapshot,
    refresh_listing,
    unpublished_runs,
)
from devtool.store.lake.lineage import at_their_times, lineage_of
from devtool.store.queries import frame_tree, get_run, list_runs, span_detail, timeline_window
from devtool.store.queries.navigation import search_spans
from testkit.lake_runs import run_events, trace_id_of
from testkit.postgres import Lakes

CORPUS = Path(__file__).resolve().parent / "corpus" / "rejelly"
RACES = 12


@pytest.fixture
def pair(lakes: Lakes, tmp_path: Path) -> Iterator[tuple[Store, Lake, Store, Lake]]:
    """Stores A and B, each in its own file, on one new lake."""
    catalog, data = lakes.new()
    opened = []
    try:
        # A's file is `lake.duckdb`: DuckDB names a file's database after it, which the lake's must not clash with.
        for name, node in (("lake", "a"), ("b", "b")):
            store = Store(tmp_path / f"{name}.duckdb")
            opened.append(store)
            opened.append(attach_lake(store, lake_config(catalog, str(data), f"node-{node}")))
        yield opened[0], opened[1], opened[2], opened[3]  # type: ignore[misc]
    finally:
        for store in opened[::2]:
            store.close()  # type: ignore[union-attr]


def lake_counts(store: Store, trace_id: str) -> tuple[int, int, int, int]:
    """The lake's runs rows, events, distinct event keys and spans of `trace_id`."""
    return store.query(
        """
        SELECT (SELECT count(*) FROM devtool_lake.runs WHERE trace_id = $t),
               (SELECT count(*) FROM devtool_lake.events WHERE trace_id = $t),
               (SELECT count(DISTINCT event_key) FROM devtool_lake.events WHERE trace_id = $t),
               (SELECT count(*) FROM devtool_lake.spans WHERE trace_id = $t)
        """,
        {"t": trace_id},
    )[0]


def test_a_run_is_published_once_and_opens_on_another_store(pair: tuple[Store, Lake, Store, Lake]) -> None:
    a, lake_a, b, lake_b = pair
    append_events(a, run_events("alpha", 20))
    trace = trace_id_of("alpha")
    assert unpublished_runs(a) == [trace]

    first = publish_run(a, lake_a, trace)
    assert (first.events, first.already) == (42, False)
    assert lake_counts(a, trace) == (1, 42, 42, 21)
    assert unpublished_runs(a) == []
    again = publish_run(a, lake_a, trace)
    assert (again.events, again.already) == (0, True)
    assert lake_counts(a, trace) == (1, 42, 42, 21)

    # B lists it as a lake run (published by A) before it holds any of it, then opens it once.
    assert refresh_listing(b) == 1
    (listed,) = list_runs(b)
    assert (listed.id, listed.source_kind, listed.source, listed.events) == (trace, "lake", "node-a", 42)
    assert b.query("SELECT count(*) FROM events")[0][0] == 0
    opened = open_run(b, lake_b, trace)
    assert opened is not None
    assert opened.events == 42
    assert b.query("SELECT count(*), count(DISTINCT event_key) FROM events")[0] == (42, 42)
    assert b.query("SELECT span_id, status FROM spans ORDER BY span_id") == a.query(
        "SELECT span_id, status FROM spans ORDER BY span_id"
    )
    (local,) = list_runs(b)
    assert local.source_kind != "lake"
    assert local.events == 42
    # Opened again: nothing added; and B does not publish back what it read from the lake.
    assert b.query("SELECT count(*) FROM events")[0][0] == 42
    assert unpublished_runs(b) == []
    assert open_run(b, lake_b, trace_id_of("nobody")) is None


def test_a_run_that_grew_adds_only_its_new_events_and_keeps_one_row(pair: tuple[Store, Lake, Store, Lake]) -> None:
    a, lake_a, _, _ = pair
    events = run_events("growing", 10)
    trace = trace_id_of("growing")
    append_events(a, events)
    publish_run(a, lake_a, trace)
    # A late event of the same run (a log line after its end): the run is published again.
    late = {**events[1], "type": "sys:log", "timestamp": events[-1]["timestamp"] + 1, "message": "late"}
    append_events(a, [late])
    assert unpublished_runs(a) == [trace]
    grown = publish_run(a, lake_a, trace)
    assert grown.events == 1
    runs, stored, distinct, _ = lake_counts(a, trace)
    assert (runs, stored, distinct) == (1, 23, 23)
    assert a.query("SELECT events FROM devtool_lake.runs WHERE trace_id = ?", [trace]) == [(23,)]


def test_a_snapshot_published_by_one_store_opens_on_the_other(pair: tuple[Store, Lake, Store, Lake]) -> None:
    a, lake_a, b, _ = pair
    document = orjson.loads((CORPUS / "nested.dump.json").read_bytes())
    snapshot_id = save_snapshot(a, document, created_by="test")
    assert publish_snapshot(a, lake_a, snapshot_id) is True
    assert publish_snapshot(a, lake_a, snapshot_id) is False
    assert open_snapshot(b, "0" * 64) is False
    assert open_snapshot(b, snapshot_id) is True
    assert get_snapshot(b, snapshot_id).snapshot == get_snapshot(a, snapshot_id).snapshot


def test_compaction_merges_the_small_files_of_many_publishes(pair: tuple[Store, Lake, Store, Lake]) -> None:
    a, lake_a, _, _ = pair
    names = [f"small {n}" for n in range(6)]
    for name in names:
        append_events(a, run_events(name, 3))
        publish_run(a, lake_a, trace_id_of(name))
    before = a.query("SELECT count(*), sum(hash(body)) FROM devtool_lake.events")[0]
    done = compact(a)
    assert done.merged >= len(names)
    assert done.created >= 1
    assert a.query("SELECT count(*), sum(hash(body)) FROM devtool_lake.events")[0] == before


def test_a_big_run_opens_head_first_then_whole_with_its_journal(
    pair: tuple[Store, Lake, Store, Lake], tmp_path: Path
) -> None:
    a, lake_a, b, lake_b = pair
    events = run_events("big", 40)  # 82 events: a head of 10, then the rest
    trace = trace_id_of("big")
    append_events(a, events)
    journal = tmp_path / "process.jsonl"
    entries = [
        {
            "entry_id": f"e{n}",
            "process_id": "worker-1",
            "timestamp": f"2026-12-06T10:00:0{n}Z",
            "entry_type": kind,
            "data": {"trace_id": trace, "n": n},
        }
        for n, kind in enumerate(("invocation_start", "invocation_result"))
    ]
    journal.write_text("".join(orjson.dumps(entry).decode() + "\n" for entry in entries))
    load_file(a, journal)
    publish_run(a, lake_a, trace)
    assert a.query("SELECT count(*) FROM devtool_lake.journal_entries")[0][0] == 2

    refresh_listing(b)
    copied = open_head(b, lake_b, trace, head=10)
    assert copied == Opening(trace, 10, 82)
    assert opening(b, trace) == copied
    assert b.query("SELECT count(*) FROM events")[0][0] == 10
    # A run being copied is not published back.
    assert unpublished_runs(b) == []

    # A link to the last step copies that span (and its ancestors: the root) before the rest.
    last = events[-2]["trace"]["spanId"]
    assert open_span(b, lake_b, trace, last) is True
    assert b.query("SELECT status FROM spans WHERE span_id = ?", [last]) == [("completed",)]
    assert open_span(b, lake_b, trace, last) is False
    assert open_span(b, lake_b, trace, "0" * 16) is False

    assert finish_open(b, lake_b, trace, chunk=25) is True  # in three chunks
    assert opening(b, trace) is None
    assert b.query("SELECT count(*), count(DISTINCT event_key) FROM events")[0] == (82, 82)
    assert b.query("SELECT span_id, status, depth FROM spans ORDER BY span_id") == a.query(
        "SELECT span_id, status, depth FROM spans ORDER BY span_id"
    )
    assert b.query("SELECT events, status FROM runs") == a.query("SELECT events, status FROM runs")
    # Its journal entries come with the rest.
    assert b.query("SELECT process_id, entry_id, trace_id FROM journal_entries ORDER BY entry_id") == [
        ("worker-1", "e0", trace),
        ("worker-1", "e1", trace),
    ]
    assert unpublished_runs(b) == []
    assert finish_open(b, lake_b, trace) is False


def statuses(store: Store, trace_id: str) -> dict[str, set[str]]:
    """The statuses a page of run `trace_id` reads: of the run (alone and listed), of its tree's nodes, of
    its timeline's bars, of its spans' details and of the span search's hits."""
    tree = frame_tree(store, trace_id, depth=2)
    nodes = [*tree.nodes, *(child for node in tree.nodes for child in node.children)]
    spans = [row[0] for row in store.query("SELECT span_id FROM spans WHERE trace_id = ?", [trace_id])]
    return {
        "run": {get_run(store, trace_id).status, *(run.status for run in list_runs(store) if run.id == trace_id)},
        "tree": {node.status for node in nodes},
        "timeline": {bar.status for bar in timeline_window(store, trace_id, width_px=400).bars},
        "detail": {span_detail(store, trace_id, span).status for span in spans},
        "search": {hit.status for hit in search_spans(store, trace_id, "step")},
    }


def test_a_run_being_copied_shows_its_spans_without_their_end_as_copying_never_running(
    pair: tuple[Store, Lake, Store, Lake],
) -> None:
    """Issue 44's page truth: while a lake run is copied, its spans whose end is not here yet (its root
    among them) are `copying`, the run has the lake's status; a run really running on the same store
    (no lake copy) is `running` everywhere; once the copy is done the spans have their own ends."""
    a, lake_a, b, lake_b = pair
    trace = trace_id_of("copied")
    append_events(a, run_events("copied", 40))  # 82 events
    publish_run(a, lake_a, trace)
    live = run_events("live here", 3)[:-2]  # two steps, and its root and third step started
    append_events(b, live)

    assert open_head(b, lake_b, trace, head=12) is not None  # the root's start and 5 steps, the 6th started
    # Before the lake's runs list is read here, the run's status is not known: copying, not running.
    assert statuses(b, trace)["run"] == {"copying"}
    refresh_listing(b)
    assert statuses(b, trace) == {
        "run": {"completed"},  # as the lake lists it
        "tree": {"copying", "completed"},
        "timeline": {"copying", "completed"},
        "detail": {"copying", "completed"},
        "search": {"copying", "completed"},
    }
    assert [run.id for run in list_runs(b, status="running")] == [live[0]["trace"]["traceId"]]
    assert {run.id for run in list_runs(b, status="completed")} == {trace}
    # The local run beside it is running, as before.
    assert statuses(b, live[0]["trace"]["traceId"]) == {
        "run": {"running"},
        "tree": {"running", "completed"},
        "timeline": {"running", "completed"},
        "detail": {"running", "completed"},
        "search": {"running", "completed"},
    }

    assert finish_open(b, lake_b, trace, chunk=25) is True
    assert statuses(b, trace) == {
        "run": {"completed"},
        "tree": {"completed"},
        "timeline": {"completed"},
        "detail": {"completed"},
        "search": {"completed"},
    }


def span_events(store: Store, trace_id: str, span_ids: list[str]) -> list[tuple[str, int]]:
    """The event keys of `span_ids` in `store`, by span."""
    return store.query(
        "SELECT span_id, event_key FROM events WHERE trace_id = ? AND span_id = ANY(?::VARCHAR[]) ORDER BY ALL",
        [trace_id, span_ids],
    )


def test_a_span_link_copies_exactly_its_lineages_events_read_by_their_times(
    pair: tuple[Store, Lake, Store, Lake],
) -> None:
    a, lake_a, b, lake_b = pair
    events = run_events("times", 30)
    trace = trace_id_of("times")
    root = events[0]["trace"]["spanId"]
    inside, late = events[21]["trace"]["spanId"], events[41]["trace"]["spanId"]  # steps 10 and 20

    def log(of: dict[str, object], at: float, message: str) -> dict[str, object]:
        return {**of, "type": "sys:log", "timestamp": at, "message": message}

    # Step 10 logs between its start and its end (a third event, within its times); step 20 logs after
    # the run's end (outside its times: the read by times misses it, the count says so).
    events.insert(22, log(events[21], events[21]["timestamp"] + 0.5, "inside"))
    events.append(log(events[42], events[-1]["timestamp"] + 5, "late"))
    append_events(a, events)
    publish_run(a, lake_a, trace)
    assert dict(a.query("SELECT span_id, events FROM spans WHERE span_id IN (?, ?)", [inside, late])) == {
        inside: 3,
        late: 3,
    }

    refresh_listing(b)
    open_head(b, lake_b, trace, head=5)
    # Read by their times, the lake gives the root's start and end and the inside log with its span's
    # start and end; of step 20 only its start and end.
    for span, found in ((inside, 2 + 3), (late, 2 + 2)):
        where, params = at_their_times(lineage_of(b, trace, span))
        read = f"SELECT count(*) FROM devtool_lake.events WHERE trace_id = $trace AND ({where})"
        assert b.query(read, {"trace": trace, **params}) == [(found,)]
    for span in (inside, late):
        assert open_span(b, lake_b, trace, span) is True
        # The span's events and its root's, exactly: none missing, none twice, no other span's.
        assert span_events(b, trace, [span, root]) == span_events(a, trace, [span, root])
        assert b.query("SELECT events, status FROM spans WHERE span_id = ?", [span]) == [(3, "completed")]
    assert b.query("SELECT count(*) FROM events")[0][0] == 5 + 2 + 3 + 3 - 1  # the root's start is the head's
    assert b.query(
        "SELECT count(DISTINCT span_id) FROM events WHERE span_id NOT IN (?, ?, ?)", [root, inside, late]
    ) == [(2,)]  # the head's two steps


def test_one_run_published_by_two_stores_at_once_lands_once(pair: tuple[Store, Lake, Store, Lake]) -> None:
    """Both stores hold the same runs and publish each at the same instant (a barrier, many times): the
    lake never holds a run twice."""
    a, lake_a, b, lake_b = pair
    names = [f"raced {n}" for n in range(RACES)]
    for name in names:
        append_events(a, run_events(name, 3))
        append_events(b, run_events(name, 3))
    start = threading.Barrier(2)
    added: dict[str, list[int]] = {trace_id_of(name): [] for name in names}

    def publisher(store: Store, lake: Lake) -> None:
        for name in names:
            start.wait(timeout=120)
            (done,) = publish_runs(store, lake, [trace_id_of(name)])
            added[done.trace_id].append(done.events)

    threads = [threading.Thread(target=publisher, args=pair_of) for pair_of in ((a, lake_a), (b, lake_b))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for name in names:
        trace = trace_id_of(name)
        assert lake_counts(a, trace) == (1, 8, 8, 4), name
        assert sorted(added[trace]) == [0, 8], name
