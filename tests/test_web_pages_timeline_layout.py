"""Drawing a timeline window: lanes for overlapping spans, the axis, labels within their budget."""

from __future__ import annotations

from devtool.store.queries import TimelineBar, TimelineWindow
from devtool.web.pages.timeline_layout import LABEL_MIN_PX, LANE_HEIGHT, MAX_LABELS, format_duration, layout, ticks


def bar(row: int, start: float, end: float, *, span: str | None = "s", count: int = 1, running: int = 0) -> TimelineBar:
    return TimelineBar(
        row=row,
        px=int(start),
        start_ms=start,
        end_ms=end,
        count=count,
        span_id=span,
        kind="agent",
        name="a",
        status="running" if running else "completed",
        failed=0,
        running=running,
        cached=0,
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


def test_a_running_bar_grows_to_now_and_a_tiny_bar_keeps_a_pixel() -> None:
    drawn = layout(window([bar(0, 100, 200, running=1), bar(1, 300, 300.01)]), now_ms=600.0)
    running, tiny = drawn.rects
    assert running.width == 500.0
    assert tiny.width == 1.0


def test_labels_only_on_wide_bars_and_never_more_than_the_budget() -> None:
    narrow = [bar(0, i, i + 0.5, span=f"n{i}") for i in range(0, 900, 2)]
    drawn = layout(window(narrow))
    assert all(r.label is None for r in drawn.rects)
    wide = [bar(row, x, x + LABEL_MIN_PX, span=f"w{row}-{x}") for row in range(100) for x in range(0, 950, 50)]
    drawn = layout(window(wide))
    assert sum(r.label is not None for r in drawn.rects) == MAX_LABELS
    merged = layout(window([bar(0, 0, 100, span=None, count=7)]))
    assert merged.rects[0].label == "7 spans"


def test_ticks_are_round_and_labelled_from_the_run_start() -> None:
    found = ticks(0.0, 1000.0, 1000, origin_ms=0.0)
    assert [t.label for t in found[:3]] == ["+0 µs", "+200 ms", "+400 ms"]
    assert [t.x for t in found[:3]] == [0.0, 200.0, 400.0]
    assert format_duration(0.5) == "500 µs"
    assert format_duration(2_500) == "2.50 s"
    assert format_duration(125_000) == "2 min 05 s"
