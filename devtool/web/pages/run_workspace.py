"""What the run page's panes show: the timeline window laid out, the overview strip, and the frame tree
opened to the selected span with that span's detail.

Each builder reads the store and returns plain data for the templates; a run, span or window that is
not there raises the store's `NotFoundError` (or `ValueError` for a window that cannot be), which
the endpoints answer with a 404 (or a 400).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

from devtool.store import Store
from devtool.store.queries import RunSummary, SpanDetail, TimelineWindow, timeline_window
from devtool.store.queries.agent_labels import agent_labels
from devtool.store.queries.cause import run_faults
from devtool.store.queries.navigation import span_place
from devtool.store.queries.replay_calls import unrecorded_spans
from devtool.web.pages.frame_tree import run_tree
from devtool.web.pages.run_url_state import RunUrlState
from devtool.web.pages.span_detail import span_detail_pane
from devtool.web.pages.timeline_layout import Selected, TimelineLayout, layout

# The timeline's element budget: every bar is one <rect> (a label only when it is wide enough to
# hold one, so few), and the axis a line and a label a tick: under 5,000 elements at any zoom.
MAX_BARS = 3800  # + MAX_LABELS (800) + the axis: under 5,000
OVERVIEW_WIDTH = 240
LIVE_WITHIN_MS = 10 * 60 * 1000


@dataclass(frozen=True)
class Overview:
    """The whole run as a density strip above the timeline: spans (and failed ones) per column."""

    width: int
    columns: list[tuple[int, tuple[int, int]]]  # (column, (spans, failed))
    peak: int


def selection(store: Store, run: RunSummary, url_state: RunUrlState) -> dict[str, Any]:
    """What the tree and the detail pane show: the tree opened down to the selected span, and its detail.
    A failed run opened with no span selected opens on its failure's cause (`queries.cause`)."""
    faults = run_faults(store, run.id)
    if url_state.span is None and faults.cause is not None:
        url_state = url_state.with_span(faults.cause.span_id)
    tree, path = run_tree(store, run.id, url_state.span)
    detail = span_detail_pane(store, run.id, url_state.span, path) if url_state.span else None
    return {
        "run": run,
        "view": url_state,
        "tree": tree,
        "path": {step.span_id for step in path},
        "detail": detail,
        "selected": _selected(detail.detail) if detail is not None else None,
        "unrecorded_spans": unrecorded_spans(store, run.id),
        "faults": faults,
    }


def selected_span(store: Store, run: RunSummary, url_state: RunUrlState) -> Selected | None:
    """Where the URL's selected span is drawn, for the timeline to outline it (None: no selection)."""
    if url_state.span is None:
        return None
    place = span_place(store, run.id, url_state.span)
    return None if place is None else Selected(url_state.span, place.depth, place.kind, place.start_ms)


def _selected(detail: SpanDetail) -> Selected:
    return Selected(detail.span_id, detail.depth, detail.kind, detail.start_ms)


def timeline(
    store: Store, run: RunSummary, url_state: RunUrlState, width: int, selected: Selected | None
) -> tuple[TimelineLayout, TimelineWindow]:
    """The run's bars in the URL's window, laid out at `width` px with `selected` outlined, and the
    window the store answered."""
    # One query, bounded by the element budget: the store merges more when the window is crowded.
    window = timeline_window(
        store, run.id, start_ms=url_state.start, end_ms=url_state.end, width_px=width, max_bars=MAX_BARS
    )
    now = time.time() * 1000
    # Running spans of a live run grow to now; those of a run that stopped long ago stop at its last event.
    live = run.status == "running" and now - run.ended_ms < LIVE_WITHIN_MS
    drawn = layout(window, width=width, now_ms=now if live else None, selected=selected)
    return _with_agent_labels(store, run.id, drawn), window


def _with_agent_labels(store: Store, trace_id: str, drawn: TimelineLayout) -> TimelineLayout:
    """Agent bars with their `#n` and props, so parallel agents of one name can be told apart."""
    agents = {rect.span_id: rect.start_ms for rect in drawn.rects if rect.kind == "agent" and rect.span_id is not None}
    labels = agent_labels(store, trace_id, agents)
    if not labels:
        return drawn
    rects = tuple(
        replace(rect, call=labels[rect.span_id].text or None) if rect.span_id in labels else rect
        for rect in drawn.rects
    )
    return replace(drawn, rects=rects)


def overview(store: Store, run: RunSummary, shown: TimelineWindow) -> Overview:
    """The density strip of the whole run. When the page shows the whole run, its bars already say
    where the spans are; only a page opened on a zoomed window asks the store again."""
    whole = shown.start_ms <= run.started_ms and shown.end_ms >= run.ended_ms
    window = shown if whole else timeline_window(store, run.id, width_px=OVERVIEW_WIDTH)
    counts = [0] * OVERVIEW_WIDTH
    failed = [0] * OVERVIEW_WIDTH
    total = max(window.run_end_ms - window.run_start_ms, 1e-9)
    for bar in window.bars:
        column = min(OVERVIEW_WIDTH - 1, int((bar.start_ms - window.run_start_ms) / total * OVERVIEW_WIDTH))
        counts[column] += bar.count
        failed[column] += bar.failed
    peak = max(counts, default=0) or 1
    return Overview(OVERVIEW_WIDTH, list(enumerate(zip(counts, failed, strict=True))), peak)
