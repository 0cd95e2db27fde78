"""The process page's state, which is all in the URL.

`/processes/<id>?entry=<entry id>&open=<trace id>&open=…&start=<ms>&end=<ms>&page=<n>`: the selected
entry, the invocations opened into their runs, the time window (absolute ms since the epoch, like the
run page's), and the page of the entries table. A reload or a copied link shows the same thing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from devtool.web.links import QueryValue, process_url
from devtool.web.pages.run_url_state import BadUrlState, short_ms, time_param

MAX_ID = 500
MAX_OPEN = 20
MAX_PAGE = 1_000_000


@dataclass(frozen=True)
class ProcessUrlState:
    """`?entry=&open=&start=&end=&page=` of a process page."""

    entry: str | None = None
    open: tuple[str, ...] = ()
    start: float | None = None
    end: float | None = None
    page: int | None = None  # None: the page that holds the selected entry (or the first)

    @classmethod
    def from_query(cls, query: Mapping[str, str], *, opened: Sequence[str] = ()) -> ProcessUrlState:
        """The state of a query's values; `opened` holds the values of `open`, a key the URL repeats."""
        entry = query.get("entry") or None
        if entry is not None and len(entry) > MAX_ID:
            raise BadUrlState(f"entry is {len(entry)} characters long: not an entry id")
        opened = tuple(dict.fromkeys(value for value in opened if value))
        if len(opened) > MAX_OPEN or any(len(value) > MAX_ID for value in opened):
            raise BadUrlState(f"open takes up to {MAX_OPEN} trace ids")
        start, end = time_param(query, "start"), time_param(query, "end")
        if (start is None) != (end is None):
            raise BadUrlState("a window needs both start and end")
        if start is not None and end is not None and end <= start:
            raise BadUrlState(f"the window must end after it starts (start={start}, end={end})")
        page = query.get("page") or None
        if page is not None and not (page.isdigit() and 1 <= int(page) <= MAX_PAGE):
            raise BadUrlState(f"page must be a number from 1 to {MAX_PAGE}, not {page[:40]!r}")
        return cls(entry, opened, start, end, None if page is None else int(page))

    @property
    def zoomed(self) -> bool:
        return self.start is not None

    def select(self, entry: str | None) -> ProcessUrlState:
        """This view with `entry` selected (the table then shows the page that holds it)."""
        return replace(self, entry=entry, page=None)

    def toggle(self, trace_id: str) -> ProcessUrlState:
        opened = tuple(t for t in self.open if t != trace_id) if trace_id in self.open else (*self.open, trace_id)
        return replace(self, open=opened)

    def window(self, start: float | None, end: float | None) -> ProcessUrlState:
        return replace(self, start=start, end=end)

    def at_page(self, page: int) -> ProcessUrlState:
        return replace(self, page=page)

    def url(self, process_id: str) -> str:
        query: dict[str, QueryValue] = {
            "entry": self.entry,
            "open": self.open,
            "start": short_ms(self.start),
            "end": short_ms(self.end),
            "page": self.page,
        }
        return process_url(process_id, **query)
