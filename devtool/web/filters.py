"""Jinja filters the pages share: durations, times, money, CSS-safe names, short ids."""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime
from typing import Any

import orjson

from devtool.web.pages.timeline_layout import format_duration


def duration(ms: float | None) -> str:
    return "—" if ms is None else format_duration(ms)


def clock(ms: float | None) -> str:
    """An event time (ms since the epoch) as UTC wall-clock time, to the millisecond; one outside the
    calendar (a store written before the event gate had its time limits can hold one) as its number."""
    if ms is None:
        return "—"
    try:
        return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"
    except (ValueError, OverflowError, OSError):
        return f"{ms:.6g} ms since the epoch"


def usd(micro: float | None) -> str:
    """Micro-dollars as money: `$12.34`, `$0.0123`, `$0.000955` (three significant digits under a
    dollar, so a cheap call is not shown as $0.00); None, a cost that is not known, is "—"."""
    if micro is None:
        return "—"
    dollars = micro / 1_000_000
    rounded = float(f"{dollars:.3g}")
    if rounded >= 1 or rounded == 0:
        return f"${dollars:,.2f}"
    decimals = max(2, 2 - math.floor(math.log10(rounded)))
    return f"${rounded:.{decimals}f}"


def css_ident(value: object) -> str:
    """`tools:execute` → `tools-execute`: a kind or status usable in a class name."""
    return re.sub(r"[^a-zA-Z0-9_-]+", "-", str(value)).strip("-") or "unknown"


def short_id(value: str | None, keep: int = 12) -> str:
    return "" if value is None else (value if len(value) <= keep else value[:keep] + "…")


def compact_json(value: Any) -> str:
    """One line of JSON, as plain text (so the template escapes it like any other text)."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return repr(value)


FILTERS = {
    "duration": duration,
    "clock": clock,
    "usd": usd,
    "css_ident": css_ident,
    "short_id": short_id,
    "compact_json": compact_json,
}
