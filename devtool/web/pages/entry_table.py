"""The process page's entries table: one page of a journal's entries, in journal order.

Without a `?page=` the table shows the page that holds the selected entry (or the first page).
"""

from __future__ import annotations

from dataclasses import dataclass

from devtool.store import NotFoundError, Store
from devtool.store.queries import StoredEntry, journal_entries
from devtool.store.queries.journal_lane import JournalSpan, entry_position
from devtool.web.links import run_url
from devtool.web.pages.journal_words import KNOWN_TYPES, summarize
from devtool.web.pages.process_url_state import ProcessUrlState
from devtool.web.pages.timeline_layout import format_duration

PAGE_SIZE = 100


@dataclass(frozen=True)
class TableRow:
    entry: StoredEntry
    number: int  # 1-based position in the journal
    offset: str  # time since the journal's first entry
    summary: str
    known: bool
    href: str
    run_href: str | None
    selected: bool


@dataclass(frozen=True)
class Table:
    rows: tuple[TableRow, ...]
    page: int
    pages: int
    total: int
    first: int  # 1-based number of the first row
    prev_href: str | None
    next_href: str | None


def build_table(store: Store, process_id: str, url_state: ProcessUrlState, span: JournalSpan) -> Table:
    pages = max((span.entries + PAGE_SIZE - 1) // PAGE_SIZE, 1)
    page = url_state.page
    if page is None:
        page = 1
        if url_state.entry is not None:
            try:
                page = entry_position(store, process_id, url_state.entry) // PAGE_SIZE + 1
            except NotFoundError:
                page = 1
    page = min(page, pages)
    first = (page - 1) * PAGE_SIZE
    entries = journal_entries(store, process_id, limit=PAGE_SIZE, offset=first)
    rows = tuple(
        TableRow(
            entry=entry,
            number=first + index + 1,
            offset="+" + format_duration(entry.ts_ms - span.start_ms),
            summary=summarize(entry.entry_type, entry.data),
            known=entry.entry_type in KNOWN_TYPES,
            href=url_state.select(entry.entry_id).url(process_id),
            run_href=run_url(entry.trace_id) if entry.trace_id else None,
            selected=entry.entry_id == url_state.entry,
        )
        for index, entry in enumerate(entries)
    )
    return Table(
        rows=rows,
        page=page,
        pages=pages,
        total=span.entries,
        first=first + 1,
        prev_href=url_state.at_page(page - 1).url(process_id) if page > 1 else None,
        next_href=url_state.at_page(page + 1).url(process_id) if page < pages else None,
    )
