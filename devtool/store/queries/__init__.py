"""The named queries the DevTool's pages ask the store, each returning plain data (frozen dataclasses).

Every query runs on a cursor of its own, so pages read while a load or a live batch writes.
"""

from __future__ import annotations

from devtool.store.queries.events import (
    Cut,
    StoredEvent,
    events_after,
    iter_run_events,
    last_event_id,
    run_events,
    span_events,
)
from devtool.store.queries.frames import FrameNode, FrameTree, frame_tree
from devtool.store.queries.journals import (
    JournalState,
    StoredEntry,
    journal_entries,
    journal_state_at,
    journal_states,
)
from devtool.store.queries.runs import RunSummary, get_run, list_runs
from devtool.store.queries.spans import SpanDetail, span_detail
from devtool.store.queries.timeline import TimelineBar, TimelineWindow, timeline_window

__all__ = [
    "Cut",
    "FrameNode",
    "FrameTree",
    "JournalState",
    "RunSummary",
    "SpanDetail",
    "StoredEntry",
    "StoredEvent",
    "TimelineBar",
    "TimelineWindow",
    "events_after",
    "frame_tree",
    "get_run",
    "iter_run_events",
    "journal_entries",
    "journal_state_at",
    "journal_states",
    "last_event_id",
    "list_runs",
    "run_events",
    "span_detail",
    "span_events",
    "timeline_window",
]
