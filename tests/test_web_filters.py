"""The pages' filters are total: any number a store can hold reads as something, never an error."""

from __future__ import annotations

import math

import pytest

from devtool.web.filters import clock, duration


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
