"""The pages' Jinja filters: money from micro-dollars."""

from __future__ import annotations

import pytest

from devtool.web.filters import usd


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
