"""The run page's state, which is all in the URL: the selected span and the time window.

`?span=<span id>&start=<ms>&end=<ms>`; a copied link or a reload shows the same thing. Times are
absolute (ms since the epoch, as in the events), so a link stays right when more events arrive.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from urllib.parse import urlencode

from devtool.web.links import QueryValue, run_url

MIN_WINDOW_MS = 0.001  # one microsecond: the finest zoom that still means something
# A time in a URL is one the calendar can show (years 1 to 9999): journals may be of any date.
FIRST_MS = -62_135_596_800_000
LAST_MS = 253_402_300_800_000


class BadUrlState(ValueError):
    """A query parameter that cannot be part of a page's state; the message names it."""


@dataclass(frozen=True)
class RunUrlState:
    """`?span=&start=&end=` of a run page."""

    span: str | None = None
    start: float | None = None
    end: float | None = None

    @classmethod
    def from_query(cls, query: Mapping[str, str]) -> RunUrlState:
        start, end = time_param(query, "start"), time_param(query, "end")
        if start is not None and end is not None and end - start < MIN_WINDOW_MS:
            raise BadUrlState(f"the window must be at least {MIN_WINDOW_MS} ms wide (start={start}, end={end})")
        span = query.get("span") or None
        if span is not None and len(span) > 200:
            raise BadUrlState("span is not a span id")
        return cls(span, start, end)

    def with_span(self, span: str | None) -> RunUrlState:
        return replace(self, span=span)

    def query(self, **extra: QueryValue) -> str:
        return urlencode({key: value for key, value in self._params(extra).items() if value is not None})

    def url(self, trace_id: str, *path: str, **extra: QueryValue) -> str:
        """This view of run `trace_id` (or of a part of its page, `path`), ids encoded as path segments."""
        return run_url(trace_id, *path, **self._params(extra))

    def _params(self, extra: dict[str, QueryValue]) -> dict[str, QueryValue]:
        return {"span": self.span, "start": short_ms(self.start), "end": short_ms(self.end), **extra}


def time_param(query: Mapping[str, str], name: str) -> float | None:
    """Query parameter `name` as a time in ms since the epoch (None when absent), or `BadUrlState`."""
    raw = query.get(name)
    if raw in (None, ""):
        return None
    try:
        value = float(raw)
    except ValueError:
        raise BadUrlState(f"{name} must be a time in ms since the epoch, not {raw[:40]!r}") from None
    if not math.isfinite(value):
        raise BadUrlState(f"{name} must be a finite number, not {raw[:40]!r}")
    if not FIRST_MS <= value < LAST_MS:
        raise BadUrlState(f"{name} must be a time from year 1 to 9999 in ms since the epoch, not {raw[:40]!r}")
    return value


def short_ms(value: float | None) -> str | None:
    # Microseconds are the finest resolution events have; more digits only make links longer.
    return None if value is None else f"{value:.3f}".rstrip("0").rstrip(".")
