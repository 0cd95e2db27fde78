"""A cut of an indexed run rebuilt from the frames it leaves open: `restore_open`.

`frame_index` says what a run's index holds. At a cut, the open frames (made before it, changed
after it: the root, the agents running at the cut and their ancestors) are rebuilt from their own
events only, with `restore_snapshot`'s own `Walk`, and each open frame's children are put back in
their places: the open ones as walked, the sealed ones as the node ids the index has for them, and
whole chunks of sealed children as the chunk nodes the index has (a chunk the cut seals whole, that
holds no running frame and not the frame's newest child). So what a rewind reads and makes grows
with the open frames, not with the frames that had ended.

Why the short walk gives the full walk's frames: an open frame's ancestors are open (`last` covers
the subtree), so every event applied to an open frame is walked, and the walk finds the same frame
for it: through a span id registered by an event of that same frame, or else as the innermost
running agent (that guess chose an open frame, so every agent started after it had stopped running
by then: the open ones the short walk has, as they did in the full walk; the sealed ones it does not
have). Sealed frames are only placed, never walked. The cut event's own frame, if it changed one, is
treated as open, so the cut is applied where it belongs. The callId the full walk gave each open
frame is handed to the short one: a frame without a callId in its events is numbered among all its
parent's children, sealed ones included. A root without run events takes its status from its
children: the running ones and the newest are among those placed one by one, which is why a reused
chunk holds neither.

Any cut `restore_open` cannot make raises `RestoreError` (a `before` cut with no earlier event of an
open frame, which the walk would take for the run's first); the caller then restores from every
event. tests/test_actions_run_rewind.py checks the two are equal at every cut of the corpus traces,
of a generated run and of runs with restore's repairs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from devtool.core.budget import BudgetTotals, empty_budget_state
from devtool.core.errors import RestoreError
from devtool.core.frame_index_records import ROOT, IndexedFrame
from devtool.core.jsonvalue import JSON
from devtool.core.restore_frames import RestoredFrame
from devtool.core.restore_timeline import Event, Skipped
from devtool.core.restore_walk import Anchor, Walk
from devtool.core.snapshot import Status
from devtool.core.snapshot_tree import FANOUT, Node, child_refs, node_id


class SealedChild(RestoredFrame):
    """A frame the cut includes whole, placed under its open parent as its node id. Of a frame it
    has only what placing it needs: the root's status may depend on its children's status and error.

    A cut may place many of these, so they are made straight from the index's rows, without the
    journals and children a walked frame starts with.
    """

    __slots__ = ("aggregate", "node", "parent", "position")

    def __init__(
        self,
        parent: int,
        position: int,
        call_id: str,
        node: str,
        status: Status,
        error: JSON,
        aggregate: BudgetTotals | None = None,
    ) -> None:
        # No RestoredFrame.__init__: its empty memory, journals and children would never be read.
        self.parent, self.position, self.call_id, self.node = parent, position, call_id, node
        self.status, self.error = status, error
        # Its node's `budgetState.aggregate`, which its open parent's aggregate adds up.
        self.aggregate = aggregate or empty_budget_state()["aggregate"]

    def aggregate_totals(self) -> BudgetTotals:
        return self.aggregate


class _ChunkTotals(SealedChild):
    """A reused chunk among its open frame's children, for what the frame reads of them: its
    children's usage (the chunk's `aggregate`) and a status that is neither running nor the newest."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class ReusedChunk:
    """A chunk of an open frame's children that the cut seals whole: its node, as the index has it."""

    frame: int
    level: int
    position: int
    node: str
    aggregate: BudgetTotals  # the usage of the chunk's frames and their descendants


@dataclass(frozen=True)
class OpenTree:
    """A snapshot restored by `restore_open`: its top (root as a node id) and the nodes it made."""

    top: dict[str, Any]
    nodes: dict[str, Node]  # the open frames' nodes and chunks, children first; sealed ones are stored


def restore_open(
    rows: Sequence[tuple[int, Event]],
    *,
    span_id: str,
    anchor: Anchor,
    open_frames: Sequence[IndexedFrame],
    sealed: Iterable[SealedChild],
    chunks: Iterable[ReusedChunk],
    children: Mapping[int, int],
) -> OpenTree:
    """The snapshot of an indexed run at a cut, as a tree. `rows`: the open frames' events before
    the cut, then the cut event itself, with their ids, in restore order; `open_frames`: the frames
    the cut leaves open (the root among them); `children`: how many children each open frame has at
    the cut; `chunks`: the chunks of those reused whole; `sealed`: the other sealed children.

    `RestoreError` when the short walk cannot make this cut (the caller then restores from every
    event, which also says why a cut is impossible, in `restore_snapshot`'s words).
    """
    made = {frame.created: frame for frame in open_frames if frame.index != ROOT}
    by_id = {event_id: _with_call_id(event, made.get(event_id)) for event_id, event in rows}
    walk = Walk(Skipped())
    cut = walk.run(list(by_id.values()), span_id, anchor)
    run = walk.runs.get(cut["trace"].get("traceId"))
    if run is None:
        raise RestoreError("Restore failed: the cut's run is not among the events given")
    frames: dict[int, RestoredFrame] = {ROOT: run.root}
    for frame in open_frames:
        if frame.index == ROOT:
            continue
        made_by = by_id.get(frame.created)
        restored = walk.owner.get(made_by["trace"]["spanId"]) if made_by is not None else None
        if restored is None or restored.call_id != frame.call_id:
            raise RestoreError(f"Restore failed: frame {frame.call_id} was not rebuilt by the short walk")
        frames[frame.index] = restored
    cut_tree = _CutTree(frames, open_frames, sealed, chunks, children)
    root_id = cut_tree.node(ROOT, walk.settled_root(cut))
    return OpenTree(walk.envelope(cut, anchor, root_id), cut_tree.nodes)


class _CutTree:
    """The open frames with their children in place (by position), and the nodes made of them."""

    def __init__(
        self,
        frames: Mapping[int, RestoredFrame],
        open_frames: Sequence[IndexedFrame],
        sealed: Iterable[SealedChild],
        chunks: Iterable[ReusedChunk],
        children: Mapping[int, int],
    ) -> None:
        self.frames, self.children = frames, children
        self.placed: dict[int, dict[int, RestoredFrame]] = {index: {} for index in frames}
        self.index_of = {id(frame): index for index, frame in frames.items()}
        for indexed in open_frames:
            if indexed.index != ROOT:
                self.placed[indexed.parent][indexed.position] = frames[indexed.index]
        for child in sealed:
            self.placed[child.parent][child.position] = child
        self.known: dict[int, dict[tuple[int, int], str]] = {index: {} for index in frames}
        self.placed_totals: dict[int, dict[int, RestoredFrame]] = {index: {} for index in frames}
        for chunk in chunks:
            self.known[chunk.frame][(chunk.level, chunk.position)] = chunk.node
            first = chunk.position * FANOUT ** (chunk.level + 1)
            key = f"chunk {chunk.level} {chunk.position}"  # no callId: not a frame of the snapshot
            self.placed_totals[chunk.frame][first] = _ChunkTotals(
                chunk.frame, first, key, chunk.node, "completed", None, chunk.aggregate
            )
        # The full walk's children, as far as they are placed one by one (the root's status reads
        # them), with the reused chunks standing for theirs in the frame's aggregate usage.
        for index, frame in frames.items():
            in_order = sorted({**self.placed_totals[index], **self.placed[index]}.items())
            frame.children = {child.call_id: child for _, child in in_order}
        self.nodes: dict[str, Node] = {}

    def node(self, index: int, frame: RestoredFrame) -> str:
        placed = self.placed[index]
        entries: dict[int, tuple[str, str]] = {}
        for position, child in placed.items():
            key = child.node if isinstance(child, SealedChild) else self.node(self.index_of[id(child)], child)
            entries[position] = (child.call_id, key)
        node = dict(frame.shaped({}))
        count, known = self.children.get(index, 0), self.known[index]
        try:
            node["children"] = child_refs(count, entries.__getitem__, known, self.nodes)
        except KeyError:
            raise RestoreError(
                f"Restore failed: children of frame {frame.call_id} are missing from the index"
            ) from None
        key = node_id(node)
        self.nodes[key] = node
        return key


def _with_call_id(event: Event, frame: IndexedFrame | None) -> Event:
    if frame is None or event.get("callId") == frame.call_id:
        return event
    return {**event, "callId": frame.call_id}
