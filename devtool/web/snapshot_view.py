"""An AgentSnapshot as its page shows it: the frame tree in order, each frame's state and journal.

A snapshot of a big run holds tens of thousands of frames, so the page shows them a page at a time
(depth-first, as the tree reads), and a frame's journal its first entries (the JSON download has
everything). A tombstone (an output that was not JSON: `output` null, `error` set) is marked: a
replay never serves it, the call runs again.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

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


@dataclass(frozen=True)
class SnapshotCounts:
    frames: int
    prompts: int
    tools: int
    tombstones: int


def walk(snapshot: dict[str, Any]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Every frame of `snapshot` with its depth, depth-first, children in their recorded order."""
    stack: list[tuple[int, dict[str, Any]]] = [(0, snapshot["root"])]
    while stack:
        depth, frame = stack.pop()
        yield depth, frame
        children = list(frame.get("children", {}).values())
        stack.extend((depth + 1, child) for child in reversed(children))


def frame_of(snapshot: dict[str, Any], call_id: str) -> dict[str, Any] | None:
    """The frame with `call_id`, wherever it is in the tree."""
    return next((frame for _, frame in walk(snapshot) if frame.get("callId") == call_id), None)


def counts(snapshot: dict[str, Any]) -> SnapshotCounts:
    frames = prompts = tools = tombstones = 0
    for _, frame in walk(snapshot):
        frames += 1
        journal = frame.get("journal", {})
        prompt, tool = journal.get("prompt", {}), journal.get("tool", {})
        prompts += len(prompt)
        tools += len(tool)
        tombstones += sum(map(_tombstone, prompt.values())) + sum(map(_tombstone, tool.values()))
    return SnapshotCounts(frames, prompts, tools, tombstones)


def frame_rows(snapshot: dict[str, Any], *, offset: int = 0, limit: int = FRAMES_PER_PAGE) -> list[FrameRow]:
    """Frames `offset` .. `offset + limit` in depth-first order, ready to show."""
    rows = []
    for index, (depth, frame) in enumerate(walk(snapshot)):
        if index < offset:
            continue
        if index >= offset + limit:
            break
        rows.append(_row(index, depth, frame))
    return rows


def _row(index: int, depth: int, frame: dict[str, Any]) -> FrameRow:
    journal = frame.get("journal", {})
    entries = [
        EntryRow(kind, str(digest), entry.get("output"), entry.get("error"), _tombstone(entry))
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


def _tombstone(entry: dict[str, Any]) -> bool:
    return entry.get("output") is None and entry.get("error") is not None
