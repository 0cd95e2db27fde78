"""An AgentSnapshot as its page shows it: provenance, totals, the frame tree in order, each frame's journal.

A snapshot of a big run holds tens of thousands of frames, so the page shows them a page at a time
(depth-first, as the tree reads; the store reads only that page), and a frame's journal its first
entries (the JSON download has everything). A tombstone (an output that was not JSON: `output`
null, `error` set) is marked: a replay never serves it, the call runs again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from devtool.core.snapshot_tree import is_tombstone
from devtool.store import Store, StoredSnapshot, list_snapshots
from devtool.store.queries.run_meta import run_exists
from devtool.store.snapshots import frame_page, snapshot_counts

FRAMES_PER_PAGE = 100
ENTRIES_SHOWN = 50


@dataclass(frozen=True)
class EntryRow:
    """One journal entry of a frame: a prompt (the model's answer) or a tool call (its output)."""

    kind: str  # "prompt" or "tool"
    content_hash: str
    output: Any
    error: Any
    tombstone: bool


@dataclass(frozen=True)
class FrameRow:
    index: int  # position in depth-first order: what forms refer to a frame by
    depth: int
    call_id: str
    agent_id: str
    status: str
    output: Any
    has_output: bool
    error: Any
    memory: dict[str, Any]
    memory_text: str  # what the fork editor starts from
    entries: list[EntryRow]
    entries_total: int
    children: int
    budget: Any


def snapshot_page_data(store: Store, stored: StoredSnapshot, offset: int, error: str | None = None) -> dict[str, Any]:
    """What the snapshot page shows (also with a fork's error, above its form): the snapshot's top
    and totals, and one page of its frames, read from the store without the rest of the tree."""
    snapshot = stored.top
    provenance = snapshot.get("provenance", {})
    trace_id = provenance.get("traceId")
    in_store = run_exists(store, trace_id) if isinstance(trace_id, str) else False
    info = stored.info
    related = list_snapshots(store, trace_id=info.trace_id) if info.trace_id else []
    return {
        "info": info,
        "snapshot": snapshot,
        "provenance": provenance,
        "run_in_store": in_store,
        "metadata": snapshot.get("metadata"),
        "counts": snapshot_counts(store, stored),
        "rows": frame_rows(frame_page(store, stored, offset=offset, limit=FRAMES_PER_PAGE)),
        "offset": offset,
        "page_size": FRAMES_PER_PAGE,
        "forks": [s for s in related if s.parent_id == info.snapshot_id],
        "error": error,
    }


def frame_rows(page: list[tuple[int, int, dict[str, Any]]]) -> list[FrameRow]:
    """A page of frames (`devtool.store.snapshots.frame_page`: position, depth, node), ready to show.
    A frame's children are counted, not read (`ChildIds` of a frame of many knows how many it has)."""
    return [_row(index, depth, frame) for index, depth, frame in page]


def _row(index: int, depth: int, frame: dict[str, Any]) -> FrameRow:
    journal = frame.get("journal", {})
    entries = [
        EntryRow(kind, str(digest), entry.get("output"), entry.get("error"), is_tombstone(entry))
        for kind in ("prompt", "tool")
        for digest, entry in journal.get(kind, {}).items()
    ]
    state = frame.get("state", {})
    return FrameRow(
        index=index,
        depth=depth,
        call_id=str(frame.get("callId", "")),
        agent_id=str(frame.get("agentId", "")),
        status=str(state.get("status", "")),
        output=state.get("output"),
        has_output="output" in state,
        error=state.get("error"),
        memory=frame.get("memory", {}),
        memory_text=json.dumps(frame.get("memory", {}), indent=2, ensure_ascii=False),
        entries=entries[:ENTRIES_SHOWN],
        entries_total=len(entries),
        children=len(frame.get("children", {})),
        budget=frame.get("budgetState"),
    )
