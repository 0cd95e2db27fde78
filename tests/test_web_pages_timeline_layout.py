"""Drawing a timeline window: lanes for overlapping spans (following their parents), the selection
outlined where it is drawn, the axis, labels within their budget."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from devtool.store.queries import TimelineBar, TimelineWindow
from devtool.web.pages.timeline_layout import (
    LABEL_MIN_PX,
    LANE_HEIGHT,
    MAX_LABELS,
    MAX_LANES,
    MAX_TICKS,
    MIN_BAR_PX,
    Selected,
    format_duration,
    layout,
    ticks,
)


def bar(
    row: int,
    start: float,
    end: float,
    *,
    span: str | None = "s",
    count: int = 1,
    running: int = 0,
    kind: str = "agent",
    name: str = "a",
    one_name: bool = True,
    parent: str | None = None,
) -> TimelineBar:
    return TimelineBar(
        row=row,
        px=int(start),
        start_ms=start,
        end_ms=end,
        count=count,
        span_id=span,
        kind=kind,
        name=name,
        status="running" if running else "completed",
        failed=0,
        running=running,
        cached=0,
        one_name=one_name,
        parent_id=parent,
    )


def window(bars: list[TimelineBar], *, width: int = 1000, start: float = 0.0, end: float = 1000.0) -> TimelineWindow:
    rows = 1 + max((b.row for b in bars), default=-1)
    return TimelineWindow("t", start, end, width, 0.0, 1000.0, rows, sum(b.count for b in bars), tuple(bars))


def test_overlapping_spans_of_a_row_get_lanes_and_the_next_row_starts_below() -> None:
    drawn = layout(window([bar(0, 0, 1000), bar(1, 10, 500), bar(1, 20, 600), bar(1, 700, 900), bar(2, 0, 10)]))
    by_row = {(r.x, r.y) for r in drawn.rects}
    assert (10.0, float(LANE_HEIGHT + 4)) in by_row  # row 1, lane 0
    assert (20.0, float(2 * LANE_HEIGHT + 4)) in by_row  # overlaps: lane 1
    assert (700.0, float(LANE_HEIGHT + 4)) in by_row  # after both: back in lane 0
    assert (0.0, float(3 * LANE_HEIGHT + 8)) in by_row  # row 2 below row 1's two lanes


def test_bars_are_drawn_at_the_requested_width_whatever_the_buckets() -> None:
    drawn = layout(window([bar(0, 250, 500)], width=100), width=800)
    (rect,) = drawn.rects
    assert (rect.x, rect.width) == (200.0, 200.0)
    assert drawn.width == 800


def test_a_running_bar_grows_to_now_and_a_tiny_bar_is_drawn_wide_enough_to_see() -> None:
    drawn = layout(window([bar(0, 100, 200, running=1), bar(1, 300, 300.01)]), now_ms=600.0)
    running, tiny = drawn.rects
    assert running.width == 500.0
    assert tiny.width == MIN_BAR_PX


def test_widened_tiny_bars_do_not_push_their_neighbours_into_new_lanes() -> None:
    calls = [bar(0, x, x + 0.5, span=f"c{x}") for x in range(0, 100, 1)]  # each 0.5 px, drawn 3 px
    drawn = layout(window(calls))
    assert {r.y for r in drawn.rects} == {0.0}


def test_children_line_up_under_their_parents_lane() -> None:
    # Three parallel researchers take lanes 0-2; the generation of the third starts when the first
    # lane is free again, but goes under its own researcher, in lane 2.
    researchers = [bar(0, 0, 500, span=f"r{i}") for i in range(3)]
    generations = [bar(1, 10, 400, span="g0", parent="r0"), bar(1, 450, 490, span="g2", parent="r2")]
    drawn = layout(window(researchers + generations))
    lanes = {r.span_id: int(r.y // LANE_HEIGHT) for r in drawn.rects}
    top = 3 * LANE_HEIGHT + 4  # row 1 starts below row 0's three lanes
    assert {r.span_id: r.y for r in drawn.rects if r.span_id in ("g0", "g2")} == {
        "g0": float(top),
        "g2": float(top + 2 * LANE_HEIGHT),
    }
    assert [lanes[f"r{i}"] for i in range(3)] == [0, 1, 2]


def test_past_the_lane_limit_bars_share_the_last_lane_and_say_so() -> None:
    parallel = [bar(0, i, 900, span=f"w{i}") for i in range(MAX_LANES + 3)]
    drawn = layout(window(parallel))
    assert drawn.height == MAX_LANES * LANE_HEIGHT + 4
    assert sum(r.overflow for r in drawn.rects) == 3
    assert all("more run at once" in r.title for r in drawn.rects if r.overflow)


def test_a_merged_bar_says_what_it_holds_and_outlines_a_selected_span_inside_it() -> None:
    same = bar(0, 100, 110, span=None, count=3, kind="tools:execute", name="web_search")
    mixed = bar(1, 100, 110, span=None, count=5, kind="turn", name="turn 0", one_name=False)
    alone = bar(2, 0, 900, span="x")
    inside = Selected("t9", row=1, kind="turn", start_ms=105.0)
    drawn = layout(window([same, mixed, alone]), selected=inside)
    web, turns, single = drawn.rects
    assert web.what == "3 × web_search"
    assert "tools:execute" in web.title
    assert turns.what == "5 turn spans"
    assert "too short to draw at this zoom" in turns.title
    assert (web.selected, turns.selected, single.selected) == (False, True, False)
    assert layout(window([alone]), selected=Selected("x", 2, "agent", 0.0)).rects[0].selected


def test_labels_only_on_wide_bars_and_never_more_than_the_budget() -> None:
    narrow = [bar(0, i, i + 0.5, span=f"n{i}") for i in range(0, 900, 2)]
    drawn = layout(window(narrow))
    assert all(r.label is None for r in drawn.rects)
    wide = [bar(row, x, x + LABEL_MIN_PX, span=f"w{row}-{x}") for row in range(100) for x in range(0, 950, 50)]
    drawn = layout(window(wide))
    assert sum(r.label is not None for r in drawn.rects) == MAX_LABELS
    merged = layout(window([bar(0, 0, 100, span=None, count=7)]))
    assert merged.rects[0].label == "7 × a"


def test_ticks_are_round_and_labelled_from_the_run_start() -> None:
    found = ticks(0.0, 1000.0, 1000, origin_ms=0.0)
    assert [t.label for t in found[:3]] == ["+0 µs", "+200 ms", "+400 ms"]
    assert [t.x for t in found[:3]] == [0.0, 200.0, 400.0]
    assert format_duration(0.5) == "500 µs"
    assert format_duration(2_500) == "2.50 s"
    assert format_duration(125_000) == "2 min 05 s"


@pytest.mark.timeout(10)
def test_ticks_stay_few_far_from_the_runs_start() -> None:
    # A window of 2 ms, 1e16 ms from the run's start: a step of the axis is below the float's
    # resolution there, so counting steps from the start would never reach the window's end.
    found = ticks(1e16, 1e16 + 2, 1000, origin_ms=1.79e12)
    assert 1 <= len(found) <= MAX_TICKS


@settings(max_examples=300, deadline=None)
@given(
    start=st.floats(min_value=-1e300, max_value=1e300),
    width=st.floats(min_value=0, max_value=1e300),
    origin=st.floats(min_value=-1e300, max_value=1e300),
)
def test_ticks_stay_few_wherever_the_window_is(start: float, width: float, origin: float) -> None:
    found = ticks(start, start + width, 1000, origin_ms=origin)
    assert len(found) <= MAX_TICKS
    assert all(math.isfinite(tick.x) and 0 <= tick.x <= 1000 for tick in found)


def test_durations_of_any_size_read_as_durations() -> None:
    assert format_duration(math.inf) == "—"
    assert format_duration(math.nan) == "—"
    assert format_duration(1e300).endswith(" d")
    assert len(format_duration(1e300)) < 40
