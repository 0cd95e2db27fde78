"""An AgentSnapshot as its page shows it: the frame tree in order, each frame's state and journal.

A snapshot of a big run holds tens of thousands of frames, so the page shows them a page at a time
(depth-first, as the tree reads; the store reads only that page), and a frame's journal its first
entries (the JSON download has everything). A tombstone (an output that was not JSON: `output`
null, `error` set) is marked: a replay never serves it, the call runs again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from devtool.store.snapshots import is_tombstone

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


def frame_rows(page: list[tuple[int, int, dict[str, Any]]]) -> list[FrameRow]:
    """A page of frames (`devtool.store.snapshots.frame_page`: position, depth, node), ready to show."""
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
