"""The timeline window: spans by depth, each wide one a bar, narrow ones merged by kind, within the budget."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from devtool.store import NotFoundError, Store, append_events
from devtool.store.queries import timeline_window
from devtool.store.queries.timeline import MIN_PX
from tests.conftest import Trace

# Runs start here and times are offsets from it. A power of two (in 2004): offsets keep their
# binary fractions exactly, as they would from 0.
T0 = float(2**40)


def fan_out(workers: int, *, length: float, gap: float, running_last: bool = False) -> Trace:
    """A root agent with `workers` children one after another, each `length` ms, `gap` ms apart."""
    t = Trace(start_ms=T0)
    root = t.start("agent", agentId="root", at=T0)
    at = T0
    for index in range(workers):
        worker = t.start("agent", root, agentId="worker", at=at)
        if not (running_last and index == workers - 1):
            t.end(worker, at=at + length, success=index % 7 != 3)
        at += length + gap
    t.end(root, at=at)
    return t


def test_wide_spans_are_bars_of_their_own(store: Store) -> None:
    t = fan_out(10, length=90.0, gap=10.0)
    append_events(store, t.events)
    window = timeline_window(store, t.trace_id, width_px=100)
    assert (window.start_ms - T0, window.end_ms - T0, window.rows) == (0.0, 1000.0, 2)
    workers = [bar for bar in window.bars if bar.row == 1]
    assert [bar.px for bar in workers] == list(range(0, 100, 10))
    assert all(bar.count == 1 and bar.span_id and bar.name == "worker" for bar in workers)
    assert [bar.status for bar in workers][3] == "failed"
    assert (workers[0].start_ms - T0, workers[0].end_ms - T0) == (0.0, 90.0)


def test_spans_too_narrow_to_see_merge_into_counted_bars(store: Store) -> None:
    t = fan_out(1000, length=0.5, gap=0.5)  # 1000 spans over 1000 ms, drawn on 30 px
    append_events(store, t.events)
    window = timeline_window(store, t.trace_id, width_px=10 * MIN_PX)
    workers = [bar for bar in window.bars if bar.row == 1]
    assert len(workers) == 10  # one per MIN_PX columns
    assert sum(bar.count for bar in workers) == 1000
    assert all(bar.span_id is None and bar.merged and bar.kind == "agent" for bar in workers)
    assert all(bar.name == "worker" and bar.one_name for bar in workers)
    assert sum(bar.failed for bar in workers) == len([i for i in range(1000) if i % 7 == 3])
    assert all(bar.status == "failed" for bar in workers)  # every column holds a failure
    assert window.spans == 1001


def test_parallel_spans_that_start_and_end_together_stay_apart(store: Store) -> None:
    # Three researchers fanned out at once that take the same time: wide enough to see, so each is a
    # bar of its own (the layout gives them lanes), never one "3 spans" bar.
    t = Trace(start_ms=T0)
    root = t.start("agent", agentId="lead", at=T0)
    researchers = [t.start("agent", root, agentId="researcher", at=T0 + 100.0) for _ in range(3)]
    for researcher in researchers:
        t.end(researcher, at=T0 + 400.0)
    t.end(root, at=T0 + 1000.0)
    append_events(store, t.events)
    row = [bar for bar in timeline_window(store, t.trace_id, width_px=100).bars if bar.row == 1]
    assert sorted(bar.span_id or "" for bar in row) == sorted(researchers)
    assert [bar.parent_id for bar in row] == [root] * 3


def test_a_merged_bar_holds_one_kind_and_says_whether_its_names_differ(store: Store) -> None:
    # Quick turns and tool calls of two workers, interleaved at one depth: each kind merges apart.
    t = Trace(start_ms=T0)
    root = t.start("agent", agentId="lead", at=T0)
    for index in range(40):
        turn = t.start("turn", root, step=index, at=T0 + index * 1.0)
        t.end(turn, at=T0 + index * 1.0 + 0.1)
        tool = "web_search" if index % 2 else "fetch_page"
        tools = t.start("tools:execute", root, toolNames=[tool], at=T0 + index + 0.2)
        t.end(tools, at=T0 + index + 0.3)
    t.end(root, at=T0 + 1000.0)
    append_events(store, t.events)
    # 60 px over 1000 ms: the first MIN_PX columns hold all 40 ms of them.
    row = [bar for bar in timeline_window(store, t.trace_id, width_px=60).bars if bar.row == 1]
    assert {bar.kind for bar in row} == {"turn", "tools:execute"}
    (turns,) = [bar for bar in row if bar.kind == "turn"]
    (tools,) = [bar for bar in row if bar.kind == "tools:execute"]
    assert (turns.count, tools.count) == (40, 40)
    assert turns.one_name is False  # turn 0, turn 1, ...
    assert tools.one_name is False
    assert tools.name in ("web_search", "fetch_page")


def test_spans_the_tree_looks_through_are_not_drawn(store: Store) -> None:
    t = Trace(start_ms=T0)
    root = t.start("agent", agentId="lead", at=T0)
    loop = t.start("promptAgent", root, at=T0 + 10.0)
    turn = t.start("turn", loop, at=T0 + 10.0)
    call = t.start("model:call", turn, at=T0 + 11.0)
    t.end(call, at=T0 + 80.0)
    t.end(turn, at=T0 + 90.0)
    t.end(loop, at=T0 + 90.0)
    t.end(root, at=T0 + 100.0)
    append_events(store, t.events)
    kinds = {bar.kind for bar in timeline_window(store, t.trace_id, width_px=100).bars}
    assert kinds == {"agent", "turn"}


def test_a_window_shows_what_overlaps_it_and_pins_earlier_starts_to_pixel_0(store: Store) -> None:
    t = fan_out(10, length=90.0, gap=10.0)
    append_events(store, t.events)
    window = timeline_window(store, t.trace_id, start_ms=T0 + 250.0, end_ms=T0 + 450.0, width_px=200)
    workers = [bar for bar in window.bars if bar.row == 1]
    assert [(bar.px, bar.start_ms - T0) for bar in workers] == [(0, 200.0), (50, 300.0), (150, 400.0)]
    root = [bar for bar in window.bars if bar.row == 0]
    assert [(bar.px, bar.count) for bar in root] == [(0, 1)]


def test_spans_that_start_together_stay_apart_when_their_ends_differ(store: Store) -> None:
    # Parallel sub-agents fanned out at once, or begun before the window (seen zoomed in), start in
    # the same pixel; each is drawn on its own as soon as its end falls in another pixel.
    t = Trace(start_ms=T0)
    root = t.start("agent", agentId="root", at=T0)
    workers = [t.start("agent", root, agentId=f"w{i}", at=T0 + 1.0 + i * 0.001) for i in range(5)]
    for index, worker in enumerate(workers):
        t.end(worker, at=T0 + 600.0 + 50 * index)
    t.end(root, at=T0 + 1000.0)
    append_events(store, t.events)
    whole = [bar for bar in timeline_window(store, t.trace_id, width_px=100).bars if bar.row == 1]
    assert [bar.count for bar in whole] == [1] * 5
    # Zoomed in where all five run: they began before the window and end after it, at different times.
    zoomed = [
        bar for bar in timeline_window(store, t.trace_id, start_ms=T0 + 400.0, end_ms=T0 + 500.0, width_px=100).bars
    ]
    assert [bar.count for bar in zoomed if bar.row == 1] == [1] * 5
    assert all(bar.px == 0 for bar in zoomed if bar.row == 1)
    late = timeline_window(store, t.trace_id, start_ms=T0 + 500.0, end_ms=T0 + 900.0, width_px=100).bars
    assert [bar.count for bar in late if bar.row == 1] == [1] * 5
    assert all(bar.px == 0 for bar in late if bar.row == 1)


def test_a_dense_window_merges_wide_spans_too_but_stays_within_the_bound(store: Store) -> None:
    t = Trace(start_ms=T0)
    root = t.start("agent", agentId="root", at=T0)
    for index in range(400):  # long, overlapping, all different: more (start, end) pairs than pixels
        worker = t.start("agent", root, agentId="w", at=T0 + index * 0.5)
        t.end(worker, at=T0 + 300.0 + index * 1.7)
    t.end(root, at=T0 + 1000.0)
    append_events(store, t.events)
    window = timeline_window(store, t.trace_id, width_px=20)
    assert len(window.bars) <= window.rows * 20
    assert window.spans == 401
    budgeted = timeline_window(store, t.trace_id, width_px=1000, max_bars=50)
    assert len(budgeted.bars) <= 50
    assert budgeted.spans == 401


def test_cached_spans_are_counted_on_their_bars(store: Store) -> None:
    t = Trace(start_ms=T0)
    root = t.start("agent", agentId="root", at=T0)
    for index in range(4):
        turn = t.start("turn", root, at=T0 + 10.0 * index + 1)
        t.end(turn, at=T0 + 10.0 * index + 9, cache=index % 2 == 0, success=True)
    t.end(root, at=T0 + 50.0)
    append_events(store, t.events)
    turns = [bar for bar in timeline_window(store, t.trace_id, width_px=50).bars if bar.row == 1]
    assert [bar.cached for bar in turns] == [1, 0, 1, 0]


def test_a_running_span_reaches_the_runs_last_event(store: Store) -> None:
    t = fan_out(3, length=10.0, gap=0.0, running_last=True)
    append_events(store, t.events)
    window = timeline_window(store, t.trace_id, width_px=30)
    last = [bar for bar in window.bars if bar.row == 1][-1]
    assert (last.status, last.running, last.end_ms) == ("running", 1, window.run_end_ms)


def test_instants_only_when_asked(store: Store) -> None:
    t = fan_out(2, length=10.0, gap=0.0)
    t.point("budget:update", t.events[0]["trace"]["spanId"], at=T0 + 5.0)
    append_events(store, t.events)
    assert all(bar.kind != "budget:update" for bar in timeline_window(store, t.trace_id).bars)
    assert any(bar.kind == "budget:update" for bar in timeline_window(store, t.trace_id, instants=True).bars)


def test_bad_windows_and_unknown_runs(store: Store) -> None:
    t = fan_out(2, length=10.0, gap=0.0)
    append_events(store, t.events)
    with pytest.raises(ValueError, match="width_px must be between 1 and"):
        timeline_window(store, t.trace_id, width_px=0)
    with pytest.raises(ValueError, match=r"ends .* before it starts"):
        timeline_window(store, t.trace_id, start_ms=T0 + 10.0, end_ms=T0 + 5.0)
    with pytest.raises(NotFoundError):
        timeline_window(store, "nope")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(0, 10_000),
    spans=st.integers(1, 3000),
    width=st.integers(1, 400),
    window=st.tuples(st.floats(0, 1), st.floats(0, 1)).map(sorted),
)
def test_never_more_bars_than_rows_times_width(
    store: Store, seed: int, spans: int, width: int, window: list[float]
) -> None:
    """Whatever the trace (random nesting, lengths, overlaps) and window: at most rows × width bars (or
    one per row and kind, when there are more of those), in the window's pixels, each of one kind, and
    together the bars stand for exactly the spans that overlap the window."""
    rng = random.Random(seed)
    t = Trace(start_ms=T0)
    open_spans: list[tuple[str, float]] = []
    for _ in range(spans):
        parent = rng.choice(open_spans)[0] if open_spans and rng.random() < 0.8 else ""
        start = T0 + rng.uniform(0, 10_000)
        span = t.start(rng.choice(["agent", "turn", "tools:execute"]), parent, at=start)
        open_spans.append((span, start))
        if rng.random() < 0.95:
            t.end(span, at=start + rng.expovariate(1 / 50))
    append_events(store, t.events)
    ((run_start, run_end),) = store.query("SELECT started_ts, ended_ts FROM runs WHERE trace_id = ?", [t.trace_id])
    start = run_start + window[0] * (run_end - run_start)
    end = run_start + window[1] * (run_end - run_start)
    result = timeline_window(store, t.trace_id, start_ms=start, end_ms=end, width_px=width)
    assert len(result.bars) <= max(result.rows * width, len({(bar.row, bar.kind) for bar in result.bars}))
    assert all(0 <= bar.px < width for bar in result.bars)
    (overlapping,) = store.query(
        "SELECT count(*) FROM spans WHERE trace_id = ? AND NOT instant AND start_ts <= ? AND coalesce(end_ts, ?) >= ?",
        [t.trace_id, end, run_end, start],
    )[0]
    assert result.spans == overlapping
    with store.writer() as conn:
        conn.execute("DELETE FROM events; DELETE FROM spans; DELETE FROM runs")
