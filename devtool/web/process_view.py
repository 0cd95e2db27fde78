"""What the process page shows, built from the store: the journal's lanes on a time axis, its
invocations opened into their runs' spans on the same axis, a page of the entries table, and an entry's
state just before and just after it.

Everything on the chart is placed in percent of the time window, so it fills any pane width without
the browser telling the server its size. The store bounds what comes back: the journal answers with
one mark per entry type and column (`journal_marks`), an opened run with one bar per row and column
(`timeline_window`, laid out by the run page's `timeline_layout`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from devtool.store import NotFoundError, Store, StoreError
from devtool.store.queries import JournalState, StoredEntry, journal_entries, journal_state_at, timeline_window
from devtool.store.queries.journal_lane import (
    Invocation,
    JournalMark,
    JournalSpan,
    entry_position,
    journal_marks,
)
from devtool.web.diff import Change, diff
from devtool.web.links import run_url
from devtool.web.process_state import ProcessView
from devtool.web.timeline_layout import format_duration, layout, ticks

COLUMNS = 1000  # of the lane and of an opened run: about a pixel each in a full-width pane
PAGE_SIZE = 100
PAD = 0.015  # of the window on each side, so the first and last marks are not cut in half
SUMMARY_CHARS = 160
CONVERSATION_TAIL = 6  # messages shown of the conversation an entry leaves unchanged

# The lanes of the chart, top to bottom, and the entry types each one draws. Other types go to "other".
LANES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("lifecycle", "Lifecycle", ("state_transition", "restart")),
    ("triggers", "Triggers", ("trigger_event",)),
    ("invocations", "Invocations", ("invocation_start", "invocation_result")),
    ("context", "Context", ("context_update",)),
    ("conversation", "Conversation", ("user_prompt", "assistant_message", "conversation_turn")),
    ("tools", "Tools & code", ("tool_call", "tool_result", "file_write", "file_change", "code_execution")),
    ("checkpoints", "Checkpoints", ("checkpoint", "rewind")),
    ("errors", "Errors", ("error",)),
    ("other", "Other types", ()),
)
LANE_OF = {entry_type: key for key, _, types in LANES for entry_type in types}
KNOWN_TYPES = frozenset(LANE_OF)


@dataclass(frozen=True)
class Tick:
    x: float  # percent of the window
    label: str


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
    merged: bool
    label: str | None
    title: str
    href: str


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
    origin_ms: float  # the journal's first entry: times read as offsets from it
    zoomed: bool
    whole_href: str
    ticks: tuple[Tick, ...]
    lanes: tuple[Lane, ...]
    invocations: tuple[InvocationRow, ...]
    cursor: float | None  # where the selected entry is, percent across
    legend: tuple[str, ...]  # the known entry types drawn, in lane order (and "unknown" if any other is)

    @property
    def marks(self) -> int:
        return sum(len(lane.marks) for lane in self.lanes)


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


@dataclass(frozen=True)
class Conversation:
    """An entry's effect on the conversation: what it kept (its last messages), dropped and added."""

    earlier: int  # kept messages not shown
    kept: tuple[dict[str, Any], ...]
    removed: tuple[dict[str, Any], ...]
    added: tuple[dict[str, Any], ...]


@dataclass(frozen=True)
class EntryDetail:
    entry: StoredEntry
    summary: str
    known: bool
    number: int
    offset: str
    run_href: str | None
    before: JournalState | None
    after: JournalState | None
    context: tuple[Change, ...]
    conversation: Conversation | None
    error: str | None  # the state could not be rebuilt: why

    @property
    def context_changes(self) -> int:
        return sum(change.change != "same" for change in self.context)

    @property
    def lifecycle_changed(self) -> bool:
        return (
            self.before is not None
            and self.after is not None
            and (self.before.lifecycle_state != self.after.lifecycle_state)
        )


def summarize(entry_type: str, data: dict[str, Any]) -> str:
    """One line saying what an entry did, in the words of its type; any other type as compact JSON."""
    text = _summary(entry_type, data)
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1] + "…"


def _summary(entry_type: str, data: dict[str, Any]) -> str:
    get = data.get
    match entry_type:
        case "state_transition":
            reason = f" ({_text(get('reason'))})" if get("reason") else ""
            return f"{_text(get('from_state', '?'))} → {_text(get('to_state', '?'))}{reason}"
        case "trigger_event":
            rest = {k: v for k, v in data.items() if k not in ("trigger_type", "trigger_id")}
            who = " ".join(_text(get(k)) for k in ("trigger_type", "trigger_id") if get(k))
            return f"{who or 'trigger'}{': ' + _compact(rest.get('payload', rest)) if rest else ''}"
        case "context_update":
            return f"{_text(get('key', '?'))} = {_compact(get('value'))}"
        case "user_prompt":
            return f"user: {_text(get('prompt', get('content', '')))}"
        case "assistant_message":
            return f"assistant: {_text(get('content', ''))}"
        case "conversation_turn":
            return f"{_text(get('role', '?'))}: {_text(get('content', ''))}"
        case "tool_call":
            return f"{_text(get('tool', get('name', '?')))}({_compact(get('args', get('arguments', {})))})"
        case "tool_result":
            return f"{_text(get('tool', get('name', '?')))} → {_compact(get('result', get('output')))}"
        case "invocation_start":
            return f"invocation {_text(get('invocation', '?'))} started" + (
                f" · run {_text(get('trace_id'))[:12]}" if get("trace_id") else ""
            )
        case "invocation_result":
            success, took_ms = get("success"), get("duration_ms")
            outcome = "succeeded" if success is True else "failed" if success is False else "ended"
            took = f" in {format_duration(took_ms)}" if isinstance(took_ms, int | float) else ""
            return f"invocation {_text(get('invocation', '?'))} {outcome}{took}"
        case "checkpoint":
            state = get("state")
            state = state if isinstance(state, dict) else {}
            context = state.get("context_state")
            context = context if isinstance(context, dict) else {}
            return f"checkpoint: {len(context)} context keys, lifecycle {_text(state.get('lifecycle_state', '?'))}"
        case "rewind":
            mode, actor = _text(get("mode", "?")), _text(get("actor", "?"))
            return f"rewind to {_text(get('target_entry_id', '?'))} ({mode}, by {actor})"
        case "error":
            return _text(get("message", _compact(data)))
    return _compact(data)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else _compact(value)


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "), default=str)[: SUMMARY_CHARS * 2]


def _percent(t: float, start: float, end: float) -> float:
    return round((t - start) / max(end - start, 1e-9) * 100, 4)


def default_window(span: JournalSpan, invocations: list[Invocation]) -> tuple[float, float]:
    """The whole journal and the runs it started, with a little room on each side."""
    start = min([span.start_ms, *(inv.first_ms for inv in invocations)])
    end = max([span.end_ms, *(inv.last_ms for inv in invocations)])
    pad = max((end - start) * PAD, 0.5)
    return start - pad, end + pad


def window_of(view: ProcessView, span: JournalSpan, invocations: list[Invocation]) -> tuple[float, float]:
    if view.start is not None and view.end is not None:
        return view.start, view.end
    return default_window(span, invocations)


def build_chart(
    store: Store, process_id: str, view: ProcessView, span: JournalSpan, invocations: list[Invocation]
) -> Chart:
    start, end = window_of(view, span, invocations)
    marks = journal_marks(store, process_id, start_ms=start, end_ms=end, buckets=COLUMNS)
    by_lane: dict[str, list[Mark]] = {}
    for mark in marks:
        by_lane.setdefault(LANE_OF.get(mark.entry_type, "other"), []).append(
            _mark(mark, process_id, view, span, start, end)
        )
    lanes = tuple(Lane(key, label, tuple(by_lane[key])) for key, label, _ in LANES if key in by_lane)
    rows = tuple(
        _invocation_row(store, process_id, view, inv, start, end)
        for inv in invocations
        if inv.last_ms >= start and inv.first_ms <= end
    )
    cursor = None
    if view.entry is not None:
        selected = next((m for lane in lanes for m in lane.marks if m.selected), None)
        cursor = selected.x if selected is not None else None
    axis = ticks(start, end, 100, origin_ms=span.start_ms)
    drawn = {mark.entry_type for mark in marks}
    legend = tuple(t for _, _, types in LANES for t in types if t in drawn)
    if drawn - KNOWN_TYPES:
        legend += ("unknown",)
    return Chart(
        start_ms=start,
        end_ms=end,
        origin_ms=span.start_ms,
        zoomed=view.zoomed,
        whole_href=view.window(None, None).url(process_id),
        ticks=tuple(Tick(round(t.x, 4), t.label) for t in axis if 0 <= t.x <= 100),
        lanes=lanes,
        invocations=rows,
        cursor=cursor,
        legend=legend,
    )


def _mark(mark: JournalMark, process_id: str, view: ProcessView, span: JournalSpan, start: float, end: float) -> Mark:
    known = mark.entry_type in KNOWN_TYPES
    x = _percent(mark.start_ms, start, end)
    offset = "+" + format_duration(mark.start_ms - span.start_ms)
    if mark.entry_id is not None:
        summary = summarize(mark.entry_type, mark.data or {})
        return Mark(
            x=x,
            entry_type=mark.entry_type,
            known=known,
            count=1,
            entry_id=mark.entry_id,
            href=view.select(mark.entry_id).url(process_id),
            title=f"{mark.entry_type} · {offset} · {summary}",
            selected=mark.entry_id == view.entry,
        )
    room = max((mark.end_ms - mark.start_ms) * 0.1, (end - start) / COLUMNS)
    return Mark(
        x=x,
        entry_type=mark.entry_type,
        known=known,
        count=mark.count,
        entry_id=None,
        href=view.window(mark.start_ms - room, mark.end_ms + room).url(process_id),
        title=f"{mark.count:,} {mark.entry_type} entries from {offset}: click to zoom in",
        selected=False,
    )


def _invocation_row(
    store: Store, process_id: str, view: ProcessView, inv: Invocation, start: float, end: float
) -> InvocationRow:
    x0 = max(_percent(inv.first_ms, start, end), 0.0)
    x1 = min(_percent(inv.last_ms, start, end), 100.0)
    loaded = inv.run_name is not None
    opened = loaded and inv.trace_id in view.open
    status = inv.run_status or ("completed" if inv.success is True else "failed" if inv.success is False else "running")
    number = f"invocation {inv.number}" if inv.number is not None else "invocation"
    name = f"{number} · {inv.run_name or 'run ' + inv.trace_id[:12]}"
    bars: tuple[SpanBar, ...] = ()
    height = 0
    if opened:
        drawn = layout(timeline_window(store, inv.trace_id, start_ms=start, end_ms=end, width_px=COLUMNS))
        height = drawn.height
        bars = tuple(
            SpanBar(
                x=round(rect.x / COLUMNS * 100, 4),
                width=round(max(rect.width, 1.0) / COLUMNS * 100, 4),
                y=rect.y,
                height=rect.height,
                kind=rect.kind,
                status=rect.status,
                merged=rect.merged,
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
        toggle_href=view.toggle(inv.trace_id).url(process_id),
        zoom_href=view.window(inv.first_ms - room, inv.last_ms + room).url(process_id),
        run_href=run_url(inv.trace_id) if loaded else None,
        bars=bars,
        height=height,
    )


def build_table(store: Store, process_id: str, view: ProcessView, span: JournalSpan) -> Table:
    pages = max((span.entries + PAGE_SIZE - 1) // PAGE_SIZE, 1)
    page = view.page
    if page is None:
        page = 1
        if view.entry is not None:
            try:
                page = entry_position(store, process_id, view.entry) // PAGE_SIZE + 1
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
            href=view.select(entry.entry_id).url(process_id),
            run_href=run_url(entry.trace_id) if entry.trace_id else None,
            selected=entry.entry_id == view.entry,
        )
        for index, entry in enumerate(entries)
    )
    return Table(
        rows=rows,
        page=page,
        pages=pages,
        total=span.entries,
        first=first + 1,
        prev_href=view.at_page(page - 1).url(process_id) if page > 1 else None,
        next_href=view.at_page(page + 1).url(process_id) if page < pages else None,
    )


def build_detail(store: Store, process_id: str, entry_id: str, span: JournalSpan) -> EntryDetail:
    """The entry and the process's state just before and just after it; `NotFoundError` if it is not there."""
    number = entry_position(store, process_id, entry_id) + 1
    (entry,) = journal_entries(store, process_id, limit=1, offset=number - 1)
    before: JournalState | None
    after: JournalState | None
    try:
        before = journal_state_at(store, process_id, entry_id, anchor="before")
        after = journal_state_at(store, process_id, entry_id, anchor="after")
    except StoreError as exc:
        before = after = None
        error: str | None = str(exc)
    else:
        error = None
    return EntryDetail(
        entry=entry,
        summary=summarize(entry.entry_type, entry.data),
        known=entry.entry_type in KNOWN_TYPES,
        number=number,
        offset="+" + format_duration(entry.ts_ms - span.start_ms),
        run_href=run_url(entry.trace_id) if entry.trace_id else None,
        before=before,
        after=after,
        context=tuple(diff(before.context_state, after.context_state)) if before and after else (),
        conversation=_conversation(before.conversation, after.conversation) if before and after else None,
        error=error,
    )


def _conversation(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> Conversation:
    same = 0
    for old, new in zip(before, after, strict=False):
        if old != new:
            break
        same += 1
    shown = min(same, CONVERSATION_TAIL)
    return Conversation(
        earlier=same - shown,
        kept=tuple(before[same - shown : same]),
        removed=tuple(before[same:]),
        added=tuple(after[same:]),
    )
