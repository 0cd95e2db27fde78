"""An AgentSnapshot as its page shows it: provenance, totals, the frame tree in order, each frame's journal.

A snapshot of a big run holds tens of thousands of frames, so the page shows them a page at a time
(depth-first, as the tree reads; the store reads only that page), and a frame's journal its first
entries (the JSON download has everything). A tombstone (an output that was not JSON: `output`
null, `error` set) is marked: a replay never serves it, the call runs again.

A frame's memory says where it came from. Restore takes a frame's memory from the last of its
generations that ended before the cut, so a cut inside a frame's first generation gives it an empty
memory even where the run's page shows the frame setting keys (at its generation's end, after the
cut). When the snapshot's run is in the store, each frame says which generation end its memory is
from (or why it is empty), and shows, apart, what the run set in that frame after the cut: a guide
for the fork editor, not part of the snapshot.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from devtool.core.snapshot_tree import is_tombstone
from devtool.store import Store, StoredSnapshot, list_snapshots
from devtool.store.queries import get_run
from devtool.store.queries.lineage import fork_label, span_names
from devtool.store.queries.navigation import CutPoint, GenerationEnd, cut_point, generation_ends
from devtool.store.queries.run_meta import run_exists
from devtool.store.snapshots import frame_page, snapshot_counts
from devtool.web.pages.call_edit import editor_json
from devtool.web.pages.timeline_layout import format_duration

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

    @property
    def output_text(self) -> str:
        """The output as the fork editor starts from it."""
        return editor_json(self.output)


@dataclass(frozen=True)
class MemoryOrigin:
    """Where a frame's memory at the cut came from, and what the run set in that frame after it."""

    text: str
    later: dict[str, Any]  # keys the run set after the cut to values the snapshot does not have
    later_from: str  # which generation end `later` is from


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
    origin: MemoryOrigin | None = None  # None: the snapshot's run is not in the store to say


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
        "rows": _with_origins(
            store, snapshot, in_store, frame_rows(frame_page(store, stored, offset=offset, limit=FRAMES_PER_PAGE))
        ),
        "offset": offset,
        "page_size": FRAMES_PER_PAGE,
        "forks": [s for s in related if s.parent_id == info.snapshot_id],
        "cut_name": _cut_name(store, provenance) if in_store else None,
        "fork_label": fork_label(snapshot.get("metadata")),
        "error": error,
    }


def _cut_name(store: Store, provenance: dict[str, Any]) -> str | None:
    """The span the snapshot was cut at, named ("tool fetch_page in researcher #1")."""
    trace_id, span_id = provenance.get("traceId"), provenance.get("spanId")
    if not (isinstance(trace_id, str) and isinstance(span_id, str)):
        return None
    return span_names(store, [(trace_id, span_id)]).get((trace_id, span_id))


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
        memory_text=editor_json(frame.get("memory", {})),
        entries=entries[:ENTRIES_SHOWN],
        entries_total=len(entries),
        children=len(frame.get("children", {})),
        budget=frame.get("budgetState"),
    )


def _with_origins(store: Store, snapshot: dict[str, Any], in_store: bool, rows: list[FrameRow]) -> list[FrameRow]:
    """`rows`, each with where its memory came from, when the snapshot's run is in the store."""
    provenance = snapshot.get("provenance", {})
    trace_id = provenance.get("traceId")
    if not in_store or not isinstance(trace_id, str):
        return rows
    cut = _cut(store, trace_id, provenance, snapshot.get("timestamp"))
    if cut is None:
        return rows
    started = get_run(store, trace_id).started_ms
    ends = generation_ends(store, trace_id, [row.call_id for row in rows if row.call_id != "root"])
    return [replace(row, origin=_origin(row, ends.get(row.call_id, []), cut, started)) for row in rows]


def _cut(store: Store, trace_id: str, provenance: dict[str, Any], timestamp: Any) -> CutPoint | None:
    span_id, anchor = provenance.get("spanId"), provenance.get("anchor")
    if isinstance(span_id, str) and anchor in ("before", "after"):
        return cut_point(store, trace_id, span_id, str(anchor))
    if isinstance(timestamp, int | float) and not isinstance(timestamp, bool):
        return CutPoint(float(timestamp), math.inf, inclusive=True)  # a dump: whatever had happened by then
    return None


def _origin(row: FrameRow, ends: list[GenerationEnd], cut: CutPoint, started: float) -> MemoryOrigin:
    if not ends:
        # The run's root and an agent that never ended a generation: nothing for restore to take.
        empty = "the run ended no generation in this frame"
        if row.memory:
            return MemoryOrigin(f"edited: {empty}, so its memory here was empty", {}, "")
        return MemoryOrigin(f"empty: {empty} (memory is restored from a frame's generation ends)", {}, "")
    before = [end for end in ends if cut.keeps(end.ended_ms, end.event_id)]
    after = [end for end in ends if not cut.keeps(end.ended_ms, end.event_id)]
    if before:
        last = before[-1]
        text = f"from the end of its {last.name}, at +{format_duration(last.ended_ms - started)}"
        if last.memory is not None and last.memory != row.memory:
            text = f"edited: its {last.name} ended with other values (at +{format_duration(last.ended_ms - started)})"
    elif row.memory:
        text = "edited: none of its generations had ended at the cut, so the run's memory here was empty"
    else:
        text = (
            "empty: none of its generations had ended at the cut (memory is restored from a frame's "
            "generation ends, not from inside a generation)"
        )
    later: dict[str, Any] = {}
    later_from = ""
    if after and after[-1].memory is not None:
        later = {key: value for key, value in after[-1].memory.items() if row.memory.get(key, _ABSENT) != value}
        later_from = f"the end of its {after[-1].name}, at +{format_duration(after[-1].ended_ms - started)}"
    return MemoryOrigin(text, later, later_from)


_ABSENT = object()
