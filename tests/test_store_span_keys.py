"""A big run's span keys: the pages' lookups answer the same with them as by scanning `spans`."""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest

from bench.gen_trace import GeneratedTrace, generate
from devtool.store import Store, append_events, load_file, span_keys, span_keys_build, span_search
from devtool.store.queries import frame_tree, get_run, span_detail, timeline_window
from devtool.store.queries.navigation import frame_path, generation_ends, generation_memories, search_spans
from devtool.store.span_sql import HIDDEN_KINDS, SHOWN, shown
from tests.conftest import Trace


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> GeneratedTrace:
    """A run whose orchestrator has more children than the tree pages on their own (1,000)."""
    return generate(tmp_path_factory.mktemp("big") / "run.jsonl", events=24_000, seed=4)


def answers(store: Store, trace: GeneratedTrace) -> dict[str, Any]:
    """What the pages ask of the run, at spans spread over it."""
    rows = store.query("SELECT span_id, kind FROM spans WHERE trace_id = ? ORDER BY span_id", [trace.trace_id])
    picked = random.Random(1).sample(rows, 60)
    agents = [span for span, kind in rows if kind == "agent"][::97]
    # A snapshot page's frames: a hundred agents' callIds, the root's and one the run does not have.
    call_ids = [row[0] for row in store.query(
        "SELECT call_id FROM spans WHERE trace_id = ? AND kind = 'agent' ORDER BY start_ts", [trace.trace_id]
    )][::7][:100]  # fmt: skip
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
        "generation ends": generation_ends(store, trace.trace_id, [*call_ids, "root", "root/agent:nobody:0"]),
        "searches": {
            text: search_spans(store, trace.trace_id, text)
            for text in (
                *("WORKER", "upstream 503", "agent:worker:12", picked[0][0][3:11], "tools", "50%", "_", "zz"),
                *("zeppelin", "worker:orchestrator", "r:1", "Worker:90", "é", "fa", "9", "e\n", "a" * 70),
            )
        },
    }


def test_the_pages_answer_the_same_from_the_keys(store: Store, big: GeneratedTrace) -> None:
    load_file(store, big.path)
    with store.reader() as cursor:
        assert span_keys.locate(cursor, big.trace_id, [big.orchestrator_span_id]) is None  # a small load
    scanned = answers(store, big)
    assert scanned["crowded pages"][2].nodes[0].children  # past the 1,000th child of the orchestrator's generation
    assert any(len(path) >= 4 for path in scanned["paths"].values())
    assert all(scanned["searches"][text] for text in ("WORKER", "upstream 503", "agent:worker:12"))
    ends = scanned["generation ends"]
    assert len(ends) > 90
    assert all(end.memory is not None for found in ends.values() for end in found)
    span_keys_build.key_run(store, big.trace_id)
    with store.reader() as cursor:
        found = span_keys.locate(cursor, big.trace_id, [big.orchestrator_span_id])
        assert found is not None
        assert found[big.orchestrator_span_id].shown
        orchestrator = found[big.orchestrator_span_id]
        assert span_keys.count(cursor, big.trace_id, big.orchestrator_span_id) == 1  # its generation
        assert span_keys.position(cursor, big.trace_id, orchestrator) == 0
        run = span_keys._run(cursor, big.trace_id)
        assert run is not None
        # A text with a piece no span has is answered without reading the spans' text; others are not.
        assert [span_search._absent(cursor, run, text) for text in ("zeppelin", "é", "Worker:90", "fa", "e\n")] == [
            True,
            True,
            False,
            False,
            True,
        ]
        keyed_ends = span_keys.generation_ends(cursor, big.trace_id, list(scanned["generation ends"]))
        assert keyed_ends is not None
        assert len(keyed_ends) == sum(len(found) for found in scanned["generation ends"].values())
    assert answers(store, big) == scanned


def test_keys_of_a_run_that_grew_are_not_used_until_it_is_keyed_again(store: Store, big: GeneratedTrace) -> None:
    load_file(store, big.path)
    assert span_keys_build.key_run(store, big.trace_id)
    keyed = answers(store, big)
    last = orjson.loads(big.path.read_bytes().splitlines()[-1])
    late = {**last, "type": "sys:log", "timestamp": last["timestamp"] + 1}
    append_events(store, [{**late, "trace": {**last["trace"], "spanId": "feedfacefeedface"}}])
    with store.reader() as cursor:
        assert span_keys.locate(cursor, big.trace_id, [big.orchestrator_span_id]) is None
        assert span_keys.tiles(cursor, big.trace_id) is None
    assert answers(store, big) == keyed  # from `spans` (the line adds an instant: no page shows it)
    assert span_keys_build.key_run(store, big.trace_id)
    with store.reader() as cursor:
        assert span_keys.locate(cursor, big.trace_id, [big.orchestrator_span_id])
    assert store.query("SELECT count(*) FROM keyed_runs") == [(1,)]  # the older keys replaced
    assert answers(store, big) == keyed


def test_a_keyed_run_seen_wide_is_drawn_from_its_tiles_a_fraction_of_a_pixel_off(
    store: Store, big: GeneratedTrace
) -> None:
    load_file(store, big.path)
    run = get_run(store, big.trace_id)
    middle = run.started_ms + run.duration_ms / 2
    windows = {
        "whole, 100 px": {"width_px": 100},
        "whole, 400 px": {"width_px": 400},
        "a hundredth, 400 px": {"start_ms": middle, "end_ms": middle + run.duration_ms / 100, "width_px": 400},
        "a quarter, 1000 px (fine tiles)": {
            "start_ms": middle,
            "end_ms": middle + run.duration_ms / 4,
            "width_px": 1000,
        },
    }
    scanned = {name: timeline_window(store, big.trace_id, **window) for name, window in windows.items()}
    span_keys_build.key_run(store, big.trace_id)
    # Every span the timeline draws, once, at both sizes of tile; by kind, none of the kinds it leaves out.
    for table in ("span_tiles", "span_tiles_fine"):
        tiled_spans = store.query(f"SELECT sum(n) FROM {table} WHERE trace_id = ?", [big.trace_id])[0][0]
        assert tiled_spans == store.query(f"SELECT count(*) FROM spans WHERE {SHOWN}")[0][0]
    assert store.query("SELECT count(*) FROM span_tiles_fine") > store.query("SELECT count(*) FROM span_tiles")
    tiled_kinds = store.query("SELECT DISTINCT kind FROM span_tiles WHERE trace_id = ?", [big.trace_id])
    assert {kind for (kind,) in tiled_kinds} == {bar.kind for bar in scanned["whole, 400 px"].bars}
    assert not {kind for (kind,) in tiled_kinds} & set(HIDDEN_KINDS)
    tiled = {name: timeline_window(store, big.trace_id, **window) for name, window in windows.items()}
    assert tiled["a hundredth, 400 px"] == scanned["a hundredth, 400 px"]  # a pixel of few tiles: the spans
    for name in ("whole, 100 px", "whole, 400 px", "a quarter, 1000 px (fine tiles)"):
        exact, drawn = scanned[name], tiled[name]
        assert (drawn.rows, drawn.spans, drawn.width_px) == (exact.rows, exact.spans, exact.width_px)
        for row in range(exact.rows):
            ours = [bar for bar in drawn.bars if bar.row == row]
            theirs = [bar for bar in exact.bars if bar.row == row]
            if not theirs:  # a row of only what the timeline leaves out (a loop's model calls)
                assert not ours
                continue
            for field in ("count", "failed", "running", "cached"):
                assert sum(getattr(bar, field) for bar in ours) == sum(getattr(bar, field) for bar in theirs)
            for kind in {bar.kind for bar in theirs}:  # a bar is of one kind, drawn from tiles too
                count = sum(bar.count for bar in theirs if bar.kind == kind)
                assert sum(bar.count for bar in ours if bar.kind == kind) == count
            assert min(bar.start_ms for bar in ours) == min(bar.start_ms for bar in theirs)
            assert max(bar.end_ms for bar in ours) == max(bar.end_ms for bar in theirs)
            # Up to each pixel, the same spans but those a tile's width from its edge.
            total = sum(bar.count for bar in theirs)
            for px in range(exact.width_px):
                before = sum(bar.count for bar in ours if bar.px <= px) - sum(
                    bar.count for bar in theirs if bar.px <= px
                )
                assert abs(before) <= max(2, total // 100), (name, row, px)


def test_the_cut_event_read_from_a_span_row_is_the_first_edge_event_of_the_span(
    store: Store, big: GeneratedTrace
) -> None:
    odd = Trace()
    root = odd.start("agent", agentId="odd", callId="root/agent:odd:0")
    batch = odd.start("tools:execute", root)
    odd.point("sys:log", root, span=batch, message="inside the batch")  # a span of three events
    odd.end(batch)
    twice = odd.start("turn", root)
    odd.end(twice)
    odd.point("turn:end", root, span=twice)  # ended twice: `spans` keeps the last end, restore cuts at the first
    odd.point("tools:execute:end", root)  # an end without its start
    odd.end(root)
    load_file(store, big.path)
    append_events(store, odd.events)
    spans = store.query("SELECT trace_id, span_id FROM spans WHERE trace_id = ? ORDER BY span_id", [big.trace_id])
    spans = [*spans[::11], *store.query("SELECT trace_id, span_id FROM spans WHERE trace_id = ?", [odd.trace_id])]
    cases = [(*span, anchor) for span in [*spans, (big.trace_id, "0" * 16)] for anchor in ("before", "after")]

    def scanned(trace_id: str, span_id: str, anchor: str) -> int | None:
        rows = store.query(
            "SELECT event_id FROM events WHERE trace_id = ? AND span_id = ? AND ends_with(type, ?) "
            "ORDER BY ts, event_id LIMIT 1",
            [trace_id, span_id, ":start" if anchor == "before" else ":end"],
        )
        return rows[0][0] if rows else None

    expected = {case: scanned(*case) for case in cases}
    assert sum(event is None for event in expected.values()) > 10  # instants, an end without a start
    last_end = store.query("SELECT end_event_id FROM spans WHERE span_id = ?", [twice])[0][0]
    assert expected[(odd.trace_id, twice, "after")] < last_end
    for keyed in (False, True):
        if keyed:
            span_keys_build.key_run(store, big.trace_id)
            span_keys_build.key_run(store, odd.trace_id)
        with store.reader() as cursor:
            assert (span_keys.locate(cursor, big.trace_id, [big.orchestrator_span_id]) is not None) is keyed
            assert {case: span_keys.edge_event(cursor, *case) for case in cases} == expected


def test_a_load_keys_the_big_runs_it_stores_in_its_own_transaction(
    store: Store, big: GeneratedTrace, tmp_path_factory: pytest.TempPathFactory
) -> None:
    bigger = generate(
        tmp_path_factory.mktemp("bigger") / "run.jsonl", events=span_keys_build.LOAD_KEYED_EVENTS + 2000, seed=5
    )
    load_file(store, big.path)  # under the threshold: left to the server's indexer
    load_file(store, bigger.path)
    assert list(span_keys_build.runs_to_key(store, min_events=1)) == [big.trace_id]
    with store.reader() as cursor:
        assert span_keys.locate(cursor, bigger.trace_id, [bigger.orchestrator_span_id]) is not None
        assert span_keys.tiles(cursor, bigger.trace_id) is not None
    keyed = answers(store, bigger)
    with store.transaction() as conn:  # the same answers as from its spans
        conn.execute("DELETE FROM keyed_runs")
    assert answers(store, bigger) == keyed


def test_a_keyed_runs_tiles_at_either_width_are_its_shown_spans_grouped_by_the_tiles_they_start_and_end_in(
    store: Store, big: GeneratedTrace
) -> None:
    """Both widths are made in one pass (the coarse tiles from the fine ones): each is what grouping the
    spans by its own tiles makes (a tile's span and name are any of its spans': its name when they share one)."""
    load_file(store, big.path)
    span_keys_build.key_run(store, big.trace_id)
    columns = "depth, start_tile, end_tile, first, last, n, kind, failed, running, cached, frame_parent_id, one_name"
    for table, tiles in (("span_tiles", span_keys.TILES), ("span_tiles_fine", span_keys.FINE_TILES)):
        width = f"(k.tile_ms / {tiles // span_keys.TILES})"
        grouped = store.query(f"""
            SELECT s.depth, least(floor((s.start_ts - k.tile_origin) / {width}), {tiles} - 1)::BIGINT AS start_tile,
                   least(floor((coalesce(s.end_ts, r.ended_ts) - k.tile_origin) / {width}), {tiles} - 1)::BIGINT,
                   min(s.start_ts), max(coalesce(s.end_ts, r.ended_ts)), count(*), s.kind,
                   count(*) FILTER (WHERE s.status = 'failed'), count(*) FILTER (WHERE s.status = 'running'),
                   count(*) FILTER (WHERE s.cache),
                   CASE WHEN count(DISTINCT coalesce(s.frame_parent_id, '')) = 1 THEN any_value(s.frame_parent_id) END,
                   count(DISTINCT coalesce(s.name, '')) = 1 AS one_name,
                   CASE WHEN one_name THEN any_value(s.name) END
            FROM spans s JOIN keyed_runs k USING (trace_id) JOIN runs r USING (trace_id)
            WHERE s.trace_id = ? AND {shown("s")}
            GROUP BY s.depth, 2, 3, s.kind ORDER BY ALL
        """, [big.trace_id])  # fmt: skip
        stored = store.query(
            f"SELECT {columns}, CASE WHEN one_name THEN name END FROM {table} WHERE trace_id = ? ORDER BY ALL",
            [big.trace_id],
        )
        assert stored == grouped, table
        assert len(stored) > 1000
