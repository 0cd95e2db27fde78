"""A run's frame index: rewind at any cut of a big run without walking its prefix, from an index made once.

`restore_snapshot` at a cut walks every event before it. In a run of a million events, a cut in the
middle is a walk of half a million, though most of the frames it rebuilds (agents that had long
ended) are the same at every later cut. So:

`index_run` walks the whole run once, with `restore_snapshot`'s own `Walk`, and records for each frame
the event that made it (`created`), the last event that changed it or any frame under it (`last`),
the events applied to it (`events`: each event's action says which frame it changed), and the node
of its subtree as the run ends (`snapshot_tree`). At any cut that includes `last`, the frame is
exactly that node: it is *sealed*. The frames a cut leaves *open* (made before it, changed after it:
the root, the agents running at the cut and their ancestors) are few.

`restore_open` then rebuilds the snapshot at a cut from the open frames' own events only, with the
same `Walk`, and puts each open frame's sealed children back in their place as node ids. Why the
short walk gives the full walk's frames: an open frame's ancestors are open (`last` covers the
subtree), so every event applied to an open frame is walked, and the walk finds the same frame for
it: through a span id registered by an event of that same frame, or else as the innermost running
agent (that guess chose an open frame, so every agent started after it had stopped running by then:
the open ones the short walk has, as they did in the full walk; the sealed ones it does not have).
Sealed frames are only placed, never walked. The cut event's own frame, if it changed one, is
treated as open, so the cut is applied where it belongs. The callId the full walk gave each open
frame is handed to the short one: a frame without a callId in its events is numbered among all its
parent's children, sealed ones included.

A run is indexed only when this reasoning holds plainly (`NotIndexable` says why not): every event
well-formed (restore skips nothing), stored in time order, no span id or callId used by two agents
(a later one would replace the first where the short walk could not know). Other runs, and any cut
`restore_open` cannot make (it raises `RestoreError`: a `before` cut with no earlier event of an open
frame, which the walk would take for the run's first), are rewound by `restore_snapshot` over their
events: slower, the same snapshot. tests/test_actions_run_rewind.py checks the two are equal at
every cut of the corpus traces, of a generated run and of runs with restore's repairs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from devtool.core.budget import BudgetTotals, empty_budget_state
from devtool.core.errors import RestoreError
from devtool.core.jsonvalue import JSON
from devtool.core.restore_frames import RestoredFrame
from devtool.core.restore_timeline import Event, Skipped
from devtool.core.restore_walk import Anchor, Walk, usable
from devtool.core.snapshot import Status
from devtool.core.snapshot_tree import Node, node_id

ROOT: Final = 0  # the root frame's index; its parent is NO_PARENT
NO_PARENT: Final = -1


class NotIndexable(Exception):
    """A run `index_run` does not index (its rewinds walk all its events); the message says why."""


@dataclass(frozen=True, slots=True)
class IndexedFrame:
    """One frame of an indexed run: where it sits, when it was made and last changed, its events."""

    index: int  # creation order; the root is 0
    parent: int  # the index of the frame it was added to (NO_PARENT for the root)
    call_id: str
    created: int  # id of the event that made it (0 for the root, there from the start)
    last: int  # id of the last event that changed it or a frame under it
    events: tuple[int, ...]  # ids of the events applied to it, in order
    node: str  # its subtree's node id as the run ends: what it is at every cut that includes `last`
    status: Status
    error: JSON


@dataclass(frozen=True)
class RunIndex:
    frames: list[IndexedFrame]  # in creation order: a parent before its children
    nodes: dict[str, Node]  # each frame's node as the run ends, by id (children before parents)
    events: int  # events walked


class SealedChild(RestoredFrame):
    """A frame the cut includes whole, placed under its open parent as its node id. Of a frame it
    has only what placing it needs: the root's status may depend on its children's status and error.

    A cut in the middle of a big run has tens of thousands of these, so they are made straight from
    the index's rows, without the journals and children a walked frame starts with.
    """

    __slots__ = ("aggregate", "created", "node", "parent")

    def __init__(
        self,
        parent: int,
        created: int,
        call_id: str,
        node: str,
        status: Status,
        error: JSON,
        aggregate: BudgetTotals | None = None,
    ) -> None:
        # No RestoredFrame.__init__: its empty memory, journals and children would never be read.
        self.parent, self.created, self.call_id, self.node = parent, created, call_id, node
        self.status, self.error = status, error
        # Its node's `budgetState.aggregate`, which its open parent's aggregate adds up.
        self.aggregate = aggregate or empty_budget_state()["aggregate"]

    def aggregate_totals(self) -> BudgetTotals:
        return self.aggregate


@dataclass(frozen=True)
class OpenTree:
    """A snapshot restored by `restore_open`: its top (root as a node id) and the nodes it made."""

    top: dict[str, Any]
    nodes: dict[str, Node]  # the open frames' nodes, children first; sealed ones are stored already


def index_run(rows: Iterable[tuple[int, Event]]) -> RunIndex:
    """Index one run from its `(event_id, event)` rows in restore order (time, then id), without
    the types restore ignores; `NotIndexable` when the run is not one `restore_open` can rewind."""
    walk = _IndexWalk(Skipped())
    previous = -1
    count = 0
    for event_id, event in rows:
        count += 1
        if event_id <= previous:
            raise NotIndexable("its events are not stored in time order")
        previous = event_id
        if not usable(event) or event["type"] not in walk.actions:
            raise NotIndexable(f"event {event_id} is not one restore reads (malformed, or of an unknown type)")
        action = walk.actions[event["type"]]
        if action is None:
            continue
        trace = event["trace"]
        span = trace["spanId"]
        before = walk.owner.get(span)
        walk.now = event_id
        frame = action(event, trace, span)
        if walk.skipped.count:
            raise NotIndexable(walk.skipped.explain(f"event {event_id} is malformed: "))
        if before is not None and walk.owner.get(span) is not before:
            raise NotIndexable(f"span id {span[:40]!r} is used by two frames")
        if frame is not None:
            walk.applied(frame, event_id)
    return walk.index(count)


def restore_open(
    rows: Sequence[tuple[int, Event]],
    *,
    span_id: str,
    anchor: Anchor,
    open_frames: Sequence[IndexedFrame],
    sealed: Iterable[SealedChild],
) -> OpenTree:
    """The snapshot of an indexed run at a cut, as a tree. `rows`: the open frames' events before
    the cut, then the cut event itself, with their ids, in restore order; `open_frames`: the frames
    the cut leaves open (the root among them); `sealed`: the sealed children of open frames.

    `RestoreError` when the short walk cannot make this cut (the caller then restores from every
    event, which also says why a cut is impossible, in `restore_snapshot`'s words).
    """
    made = {frame.created: frame for frame in open_frames if frame.index != ROOT}
    by_id = {event_id: _with_call_id(event, made.get(event_id)) for event_id, event in rows}
    walked = list(by_id.values())
    walk = Walk(Skipped())
    cut = walk.run(walked, span_id, anchor)
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
    _place_children(frames, open_frames, sealed)
    nodes: dict[str, Node] = {}
    root_id = _node(walk.settled_root(cut), nodes)
    return OpenTree(walk.envelope(cut, anchor, root_id), nodes)


class _Tracked(RestoredFrame):
    """A frame of the index walk: knows the frame it was added to, and reports being failed by an
    ancestor's end (which changes it, though no event of its own did)."""

    __slots__ = ("parent", "walk")

    def __init__(self, call_id: str, agent_id: str, walk: _IndexWalk) -> None:
        super().__init__(call_id, agent_id)
        self.walk = walk
        self.parent: RestoredFrame | None = None

    def add_child(self, child: RestoredFrame) -> None:
        if isinstance(child, _Tracked):
            child.parent = self
        super().add_child(child)

    def abandon(self, message: str) -> None:
        super().abandon(message)
        self.walk.changed(self)


class _Record:
    __slots__ = ("created", "events", "index", "last", "parent")

    def __init__(self, index: int, parent: int, created: int) -> None:
        self.index, self.parent, self.created, self.last = index, parent, created, created
        self.events: list[int] = []


class _IndexWalk(Walk):
    """`Walk` over a whole run, recording what each event did to which frame."""

    def __init__(self, skipped: Skipped) -> None:
        super().__init__(skipped)
        self.now = 0
        self.records: dict[int, _Record] = {}  # by id() of the frame
        self.order: list[RestoredFrame] = []

    def new_frame(self, call_id: str, agent_id: str) -> RestoredFrame:
        return _Tracked(call_id, agent_id, self)

    def applied(self, frame: RestoredFrame, event_id: int) -> None:
        record = self._record(frame)
        record.events.append(event_id)
        record.last = event_id

    def changed(self, frame: RestoredFrame) -> None:
        self._record(frame).last = self.now

    def _record(self, frame: RestoredFrame) -> _Record:
        record = self.records.get(id(frame))
        if record is not None:
            return record
        if len(self.runs) != 1:
            raise NotIndexable("its events belong to several runs (trace ids)")
        root = next(iter(self.runs.values())).root
        if not self.order:  # the run's own frame comes first, whatever reached it
            self.records[id(root)] = _Record(ROOT, NO_PARENT, 0)
            self.order.append(root)
            if frame is root:
                return self.records[id(root)]
        if not isinstance(frame, _Tracked):
            raise NotIndexable("an event reached a frame that is not of its run")
        parent = frame.parent or root
        record = self.records[id(frame)] = _Record(len(self.order), self._record(parent).index, self.now)
        self.order.append(frame)
        return record

    def index(self, count: int) -> RunIndex:
        order = self.order
        if not order:
            raise NotIndexable("no agent started in it")
        records = [self.records[id(frame)] for frame in order]
        for frame, record in zip(order[1:], records[1:], strict=True):
            parent = order[record.parent]
            if parent.children.get(frame.call_id) is not frame:
                raise NotIndexable(f"callId {frame.call_id[:80]!r} is used by two agents of one parent")
        for record in reversed(records[1:]):  # a child after its parent: push `last` up the tree
            parent_record = records[record.parent]
            parent_record.last = max(parent_record.last, record.last)
        nodes: dict[str, Node] = {}
        ids: dict[int, str] = {id(order[ROOT]): ""}  # the root is rebuilt at every cut, never sealed
        for index in range(len(order) - 1, ROOT, -1):
            frame = order[index]
            children = {call_id: ids[id(child)] for call_id, child in frame.children.items()}
            node = dict(frame.shaped(children))
            key = ids[id(frame)] = node_id(node)
            nodes[key] = node
        frames = [
            IndexedFrame(
                index=record.index,
                parent=record.parent,
                call_id=frame.call_id,
                created=record.created,
                last=record.last,
                events=tuple(record.events),
                node=ids[id(frame)],
                status=frame.status,
                error=frame.error,
            )
            for frame, record in zip(order, records, strict=True)
        ]
        return RunIndex(frames=frames, nodes=nodes, events=count)


def _with_call_id(event: Event, frame: IndexedFrame | None) -> Event:
    if frame is None or event.get("callId") == frame.call_id:
        return event
    return {**event, "callId": frame.call_id}


def _place_children(
    frames: Mapping[int, RestoredFrame], open_frames: Sequence[IndexedFrame], sealed: Iterable[SealedChild]
) -> None:
    """Each open frame's children as the full walk had them at the cut: its open children and its
    sealed ones, in the order they were added."""
    placed: dict[int, list[tuple[int, RestoredFrame]]] = {index: [] for index in frames}
    for frame in open_frames:
        if frame.index != ROOT:
            placed[frame.parent].append((frame.created, frames[frame.index]))
    for child in sealed:
        placed[child.parent].append((child.created, child))
    for index, children in placed.items():
        children.sort(key=lambda pair: pair[0])
        frames[index].children = {child.call_id: child for _, child in children}


def _node(frame: RestoredFrame, nodes: dict[str, Node]) -> str:
    if isinstance(frame, SealedChild):
        return frame.node
    children = {call_id: _node(child, nodes) for call_id, child in frame.children.items()}
    node = dict(frame.shaped(children))
    key = node_id(node)
    nodes[key] = node
    return key
