"""The process chart's time axis: linear, or with a long quiet stretch cut out so the rest stays readable."""

from __future__ import annotations

import itertools

import pytest

from devtool.web.pages.time_axis import BREAK_WIDTH, MIN_SEGMENT, MIN_TICK_GAP, TimeAxis, broken

HOUR = 3_600_000.0


def test_a_journal_rewound_an_hour_later_keeps_its_first_200_ms_readable() -> None:
    # 200 ms of work, then a rewind and its checkpoint an hour later.
    axis = broken(0.0, HOUR + 10.0, [(200.0, HOUR)])
    (gap,) = axis.breaks
    assert gap.hidden_ms == HOUR - 200.0
    assert gap.label == "59 min 59 s without entries"
    first, last = axis.segments
    assert first.x1 - first.x0 > 50  # the 200 ms of work take most of the width
    assert last.x1 - last.x0 >= MIN_SEGMENT * 0.8
    assert axis.x(100.0) == pytest.approx(
        first.x1 / 2, abs=1e-3
    )  # half way through the work is half way through its segment
    assert axis.x(HOUR + 10.0) == pytest.approx(100.0)
    assert first.x1 < axis.x(HOUR / 2) < last.x0  # an instant in the cut gap is drawn on the gap
    assert axis.shown_ms == pytest.approx(210.0)
    assert last.x0 - first.x1 == pytest.approx(BREAK_WIDTH)


def test_gaps_that_are_not_most_of_the_time_stay_on_a_linear_axis() -> None:
    axis = broken(0.0, 1000.0, [(400.0, 900.0)])  # half the time: not cut
    assert axis == TimeAxis.linear(0.0, 1000.0)
    assert axis.x(250.0) == 25.0


def test_ticks_are_per_segment_and_inside_it() -> None:
    axis = broken(0.0, HOUR + 10.0, [(200.0, HOUR)])
    found = axis.ticks(origin_ms=0.0)
    assert found[0].label == "+0 µs"
    first, last = axis.segments
    inside = [t for t in found if first.x0 <= t.x <= first.x1 or last.x0 <= t.x <= last.x1]
    assert inside == list(found)
    assert any("min" in t.label for t in found)  # the last segment is labelled an hour on


@pytest.mark.parametrize("later_ms", [11 * 60_000 + 8_000.0, HOUR, 26 * HOUR])
def test_labels_across_a_cut_do_not_run_into_each_other(later_ms: float) -> None:
    # The demo's 200 ms, then a rewind minutes later: "+200 ms" and "+11 min 08 s" not drawn in one place.
    axis = broken(0.0, later_ms + 10.0, [(212.0, later_ms)]).padded(5.0)
    found = axis.ticks(origin_ms=0.0)
    assert found[-1].label.endswith((" s", " d"))  # the first tick after the cut stays: it names the jump
    assert all(b.x - a.x >= MIN_TICK_GAP * 0.99 for a, b in itertools.pairwise(found)), found


def test_padding_widens_both_ends_and_keeps_the_breaks() -> None:
    axis = broken(0.0, HOUR, [(100.0, HOUR - 100.0)]).padded(5.0)
    assert (axis.start_ms, axis.end_ms) == (-5.0, HOUR + 5.0)
    assert len(axis.breaks) == 1
