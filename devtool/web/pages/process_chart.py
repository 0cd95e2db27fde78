"""The process page's chart, built from the store: the journal's lanes on a time axis, and its
invocations opened into their runs' spans on the same axis (the entries table: `entry_table.py`).

Everything on the chart is placed in percent of the time window, so it fills any pane width without
the browser telling the server its size. The whole journal is drawn on a `time_axis` with its long
quiet stretches cut out (a rewind applied a day later does not squeeze the day's work into a
pixel); a zoomed window is linear. The store bounds what comes back: the journal answers with one
mark per entry type and column (`journal_marks`, asked per segment of the axis), an opened run with
one bar per row and column (`timeline_window`, laid out by the run page's `timeline_layout`); when
that is still more than the page's budget, the columns get coarser until it fits.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from devtool.store import Store
from devtool.store.queries import timeline_window
from devtool.store.queries.journal_lane import (
    Invocation,
    JournalMark,
    JournalSpan,
    journal_gaps,
    journal_marks,
)
from devtool.web.links import run_url
from devtool.web.pages.journal_words import KNOWN_TYPES, LANE_OF, LANES, summarize
from devtool.web.pages.process_url_state import ProcessUrlState
from devtool.web.pages.time_axis import Break, Tick, TimeAxis, broken
from devtool.web.pages.timeline_layout import format_duration, layout

COLUMNS = 1000  # of the lane and of an opened run: about a pixel each in a full-width pane
MIN_COLUMNS = 32
T = TypeVar("T")
# The chart's element budget: a crowded journal or run is bucketed coarser until it fits, so the
# page stays light (a few thousand elements) for a journal or an opened run of any size.
MAX_MARKS = 1500
MAX_SPAN_BARS = 1500  # shared by the runs opened at once
PAD = 0.015  # of the window on each side, so the first and last marks are not cut in half


@dataclass(frozen=True)
class Mark:
    """An entry on its lane, or `count` entries of one type in one column (a click zooms in on them)."""

    x: float
    entry_type: str
    known: bool
    count: int
    entry_id: str | None
    href: str
    title: str
    selected: bool


@dataclass(frozen=True)
class Lane:
    key: str
    label: str
    marks: tuple[Mark, ...]


@dataclass(frozen=True)
class SpanBar:
    """A span of an opened run (or spans merged in a column), placed in percent across, px down."""

    x: float
    width: float
    y: float
    height: float
    kind: str
    status: str
    count: int  # spans it stands for
    label: str | None
    title: str
    href: str

    @property
    def merged(self) -> bool:
        return self.count > 1


@dataclass(frozen=True)
class InvocationRow:
    invocation: Invocation
    x: float
    width: float
    name: str  # `invocation 2 · reconciler`
    took: str
    status: str  # completed | failed | running
    opened: bool
    toggle_href: str
    zoom_href: str
    run_href: str | None  # None: the run is not in the store
    bars: tuple[SpanBar, ...]
    height: int  # px of the opened run's bars


@dataclass(frozen=True)
class Chart:
    start_ms: float
    end_ms: float
    shown_ms: float  # the time drawn: the window, less the quiet stretches cut out of it
    origin_ms: float  # the journal's first entry: times read as offsets from it
    zoomed: bool
    whole_href: str
    ticks: tuple[Tick, ...]
    breaks: tuple[Break, ...]
    lanes: tuple[Lane, ...]
    invocations: tuple[InvocationRow, ...]
    cursor: float | None  # where the selected entry is, percent across
    legend: tuple[str, ...]  # the known entry types drawn, in lane order (and "unknown" if any other is)

    @property
    def marks(self) -> int:
        return sum(len(lane.marks) for lane in self.lanes)


def axis_of(store: Store, url_state: ProcessUrlState, span: JournalSpan, invocations: list[Invocation]) -> TimeAxis:
    """The URL's window, linear; else the whole journal and the runs it started, with a little room on
    each side and the quiet stretches that no invocation spans cut out."""
    if url_state.start is not None and url_state.end is not None:
        return TimeAxis.linear(url_state.start, url_state.end)
    start = min([span.start_ms, *(inv.first_ms for inv in invocations)])
    end = max([span.end_ms, *(inv.last_ms for inv in invocations)])
    gaps = [
        gap
        for gap in journal_gaps(store, span.process_id)
        if not any(inv.first_ms < gap[1] and inv.last_ms > gap[0] for inv in invocations)
    ]
    axis = broken(start, end, gaps)
    return axis.padded(max(axis.shown_ms * PAD, 0.5))


def build_chart(
    store: Store, process_id: str, url_state: ProcessUrlState, span: JournalSpan, invocations: list[Invocation]
) -> Chart:
    axis = axis_of(store, url_state, span, invocations)
    start, end = axis.start_ms, axis.end_ms
    # Marks are at most entries, and at most types × columns: the finest columns that surely fit.
    fits = COLUMNS if span.entries <= MAX_MARKS else max(MIN_COLUMNS, min(COLUMNS, MAX_MARKS // max(span.types, 1)))
    marks = _within(MAX_MARKS, lambda columns: _marks(store, process_id, axis, columns), len, fits)
    by_lane: dict[str, list[Mark]] = {}
    for mark in marks:
        by_lane.setdefault(LANE_OF.get(mark.entry_type, "other"), []).append(
            _mark(mark, process_id, url_state, span, axis)
        )
    lanes = tuple(Lane(key, label, tuple(by_lane[key])) for key, label, _ in LANES if key in by_lane)
    shown = [inv for inv in invocations if inv.last_ms >= start and inv.first_ms <= end]
    budget = MAX_SPAN_BARS // max(1, sum(inv.trace_id in url_state.open for inv in shown))
    rows = tuple(_invocation_row(store, process_id, url_state, inv, axis, budget) for inv in shown)
    cursor = None
    if url_state.entry is not None:
        selected = next((m for lane in lanes for m in lane.marks if m.selected), None)
        cursor = selected.x if selected is not None else None
    drawn = {mark.entry_type for mark in marks}
    legend = tuple(t for _, _, types in LANES for t in types if t in drawn)
    if drawn - KNOWN_TYPES:
        legend += ("unknown",)
    return Chart(
        start_ms=start,
        end_ms=end,
        shown_ms=axis.shown_ms,
        origin_ms=span.start_ms,
        zoomed=url_state.zoomed,
        whole_href=url_state.window(None, None).url(process_id),
        ticks=axis.ticks(span.start_ms),
        breaks=axis.breaks,
        lanes=lanes,
        invocations=rows,
        cursor=cursor,
        legend=legend,
    )


def _within(limit: int, answer: Callable[[int], T], size: Callable[[T], int], columns: int = COLUMNS) -> T:
    """`answer(columns)` at the finest columns (from `columns` down) whose answer holds at most `limit` items."""
    while True:
        found = answer(columns)
        items = size(found)
        if items <= limit or columns <= MIN_COLUMNS:
            return found
        # Items grow about as the columns do: aim a little under the budget, at least halving.
        columns = max(MIN_COLUMNS, min(columns // 2, int(columns * limit / items * 0.9)))


def _marks(store: Store, process_id: str, axis: TimeAxis, columns: int) -> list[JournalMark]:
    """The journal's marks in each segment of the axis, its columns shared by the segments' widths."""
    found: list[JournalMark] = []
    for segment in axis.segments:
        buckets = max(1, round(columns * (segment.x1 - segment.x0) / 100))
        found += journal_marks(store, process_id, start_ms=segment.start_ms, end_ms=segment.end_ms, buckets=buckets)
    return found


def _mark(mark: JournalMark, process_id: str, url_state: ProcessUrlState, span: JournalSpan, axis: TimeAxis) -> Mark:
    known = mark.entry_type in KNOWN_TYPES
    x = axis.x(mark.start_ms)
    offset = "+" + format_duration(mark.start_ms - span.start_ms)
    if mark.entry_id is not None:
        summary = summarize(mark.entry_type, mark.data or {})
        return Mark(
            x=x,
            entry_type=mark.entry_type,
            known=known,
            count=1,
            entry_id=mark.entry_id,
            href=url_state.select(mark.entry_id).url(process_id),
            title=f"{mark.entry_type} · {offset} · {summary}",
            selected=mark.entry_id == url_state.entry,
        )
    room = max((mark.end_ms - mark.start_ms) * 0.1, axis.shown_ms / COLUMNS * 4)
    return Mark(
        x=x,
        entry_type=mark.entry_type,
        known=known,
        count=mark.count,
        entry_id=None,
        href=url_state.window(mark.start_ms - room, mark.end_ms + room).url(process_id),
        title=f"{mark.count:,} {mark.entry_type} entries from {offset}: click to zoom in",
        selected=False,
    )


def _invocation_row(
    store: Store, process_id: str, url_state: ProcessUrlState, inv: Invocation, axis: TimeAxis, budget: int
) -> InvocationRow:
    x0 = max(axis.x(inv.first_ms), 0.0)
    x1 = min(axis.x(inv.last_ms), 100.0)
    loaded = inv.run_name is not None
    opened = loaded and inv.trace_id in url_state.open
    status = inv.run_status or ("completed" if inv.success is True else "failed" if inv.success is False else "running")
    number = f"invocation {inv.number}" if inv.number is not None else "invocation"
    name = f"{number} · {inv.run_name or 'run ' + inv.trace_id[:12]}"
    bars: tuple[SpanBar, ...] = ()
    height = 0
    if opened:
        # An invocation's run lies in one segment of the axis (no cut gap is inside an invocation).
        segment = next((s for s in axis.segments if s.end_ms >= inv.first_ms), axis.segments[-1])
        share = (segment.x1 - segment.x0) / 100
        columns = max(MIN_COLUMNS, round(COLUMNS * share))
        # The store merges more when the run's bars would pass the budget: one query.
        window = timeline_window(
            store, inv.trace_id, start_ms=segment.start_ms, end_ms=segment.end_ms, width_px=columns, max_bars=budget
        )
        drawn = layout(window, width=columns)
        height = drawn.height
        bars = tuple(
            SpanBar(
                x=round(segment.x0 + rect.x / columns * 100 * share, 4),
                width=round(max(rect.width, 1.0) / columns * 100 * share, 4),
                y=rect.y,
                height=rect.height,
                kind=rect.kind,
                status=rect.status,
                count=rect.count,
                label=rect.label,
                title=rect.title,
                href=run_url(inv.trace_id, span=rect.span_id)
                if rect.span_id is not None
                else run_url(inv.trace_id, start=rect.start_ms, end=rect.end_ms),
            )
            for rect in drawn.rects
        )
    room = max((inv.last_ms - inv.first_ms) * 0.08, 0.5)
    return InvocationRow(
        invocation=inv,
        x=x0,
        width=max(x1 - x0, 0.2),
        name=name,
        took=format_duration(inv.last_ms - inv.first_ms),
        status=status,
        opened=opened,
        toggle_href=url_state.toggle(inv.trace_id).url(process_id),
        zoom_href=url_state.window(inv.first_ms - room, inv.last_ms + room).url(process_id),
        run_href=run_url(inv.trace_id) if loaded else None,
        bars=bars,
        height=height,
    )
