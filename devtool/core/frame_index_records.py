"""The records of a run's frame index (`frame_index` makes them): its frames and chunks as the run
ends, the batches the walk hands over, and why a run is not indexed."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from devtool.core.budget import BudgetTotals
from devtool.core.jsonvalue import JSON
from devtool.core.snapshot import Status
from devtool.core.snapshot_tree import Node, NodeCounts

ROOT: Final = 0  # the root frame's index; its parent is NO_PARENT
NO_PARENT: Final = -1

DUPLICATE_CALL_ID = "callId {call_id!r} is used by two agents of one parent"


class NotIndexable(Exception):
    """A run `index_stream` does not index (its rewinds walk all its events); the message says why."""


@dataclass(frozen=True, slots=True)
class IndexedFrame:
    """One frame of an indexed run: where it sits, when it was made and last changed, its events."""

    index: int  # creation order; the root is 0
    parent: int  # the index of the frame it was added to (NO_PARENT for the root)
    position: int  # its place among its parent's children
    call_id: str
    created: int  # id of the event that made it (0 for the root, there from the start)
    last: int  # id of the last event that changed it or a frame under it
    events: tuple[int, ...]  # ids of the events applied to it, in order
    node: str  # its subtree's node id as the run ends: what it is at every cut that includes `last`
    status: Status
    error: JSON
    # Its node's `budgetState.aggregate` (None: the node has none), what its open parent adds up at a
    # cut: kept beside the node so that a cut reads it without reading the node.
    aggregate: BudgetTotals | None = None


@dataclass(frozen=True, slots=True)
class IndexedChunk:
    """A full chunk of a frame's children (`snapshot_tree.child_refs`), as the run ends: the same
    node at every cut that includes `last` and at which the frame has more children than it holds."""

    frame: int
    level: int
    position: int
    last: int  # the last event that changed any frame under it
    running: bool  # whether a frame it holds is still running as the run ends
    node: str
    aggregate: BudgetTotals  # the usage of the frames it holds and their descendants, added up in their order


@dataclass
class Batch:
    """What the walk hands over at a time: final frames, their nodes (children first) and counts, chunks."""

    frames: list[IndexedFrame] = field(default_factory=list)
    chunks: list[IndexedChunk] = field(default_factory=list)
    nodes: dict[str, Node] = field(default_factory=dict)
    counts: dict[str, NodeCounts] = field(default_factory=dict)


Sink = Callable[[Batch], None]


@dataclass(frozen=True)
class RunIndex:
    """A whole run's index, collected (`index_run`): for tests and small runs."""

    frames: list[IndexedFrame]  # in creation order: a parent before its children
    chunks: list[IndexedChunk]
    nodes: dict[str, Node]  # each frame's (and chunk's) node as the run ends, children before parents
    events: int  # events walked
