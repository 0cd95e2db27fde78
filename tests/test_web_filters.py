"""The pages' Jinja filters: money from micro-dollars, and times and durations total over any number
a store can hold (each reads as something, never an error)."""

from __future__ import annotations

import math

import pytest

from devtool.web.filters import clock, duration, usd


@pytest.mark.parametrize(
    ("micro", "shown"),
    [
        (None, "—"),  # no price: unknown, not free
        (0, "$0.00"),
        (1, "$0.00000100"),
        (955, "$0.000955"),
        (955.4, "$0.000955"),
        (12_345, "$0.0123"),
        (99_999, "$0.100"),
        (999_999, "$1.00"),
        (1_234_567, "$1.23"),
        (123_456_789, "$123.46"),
        (12_345_678_901, "$12,345.68"),
    ],
)
def test_usd_shows_money_with_three_significant_digits_under_a_dollar(micro: float | None, shown: str) -> None:
    assert usd(micro) == shown


def test_a_time_is_shown_as_utc_to_the_millisecond() -> None:
    assert clock(1_790_000_000_123.4) == "2026-09-21 14:13:20.123 UTC"
    assert clock(None) == "—"


@pytest.mark.parametrize("ms", [1.7e18, 1.7e15, -1e300, 1e300, math.inf, -math.inf, math.nan])
def test_a_time_no_calendar_holds_is_shown_as_its_number(ms: float) -> None:
    shown = clock(ms)
    assert shown.endswith("ms since the epoch")
    assert len(shown) < 60


@pytest.mark.parametrize("ms", [math.inf, math.nan, -1.0])
def test_a_duration_that_is_not_one_reads_as_a_dash_or_zero(ms: float) -> None:
    assert duration(ms) in ("—", "0 µs")
