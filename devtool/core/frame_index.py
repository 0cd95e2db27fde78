"""A run's frame index: rewind at any cut of a big run without walking its prefix, from an index made once.

`restore_snapshot` at a cut walks every event before it. In a run of a million events, a cut in the
middle is a walk of half a million, though most of the frames it rebuilds (agents that had long
ended) are the same at every later cut. So:

`index_stream` walks the whole run once, with `restore_snapshot`'s own `Walk`, and records for each
frame the event that made it (`created`), the last event that changed it or any frame under it
(`last`), the events applied to it (`events`: each event's action says which frame it changed), its
place among its parent's children (`position`), and the node of its subtree as the run ends
(`snapshot_tree`). At any cut that includes `last`, the frame is exactly that node: it is *sealed*.
The frames a cut leaves *open* (made before it, changed after it: the root, the agents running at the
cut and their ancestors) are few, and `frame_cut.restore_open` rebuilds a cut from them.

Memory does not grow with the run: a frame is handed to the caller's sink and forgotten as soon as
it is final, which is when its own end event has come and every child of it is final. Its journals,
memory and children go, and so do its spans in the walk's span map, which keeps only a hash of each
(`hash_set`, nine bytes a span): a later event that reaches one (an event after its agent's end)
makes the run `NotIndexable`, as the frame's node would be wrong.
A frame's final children are folded into chunk nodes as soon as a chunk's worth is final
(`snapshot_tree.child_refs`), each chunk handed over with the last event that changed anything under
it (`IndexedChunk`): an orchestrator of a million agents holds a few chunks' references, not a
million, and a rewind reuses every chunk its cut seals whole. What is still open when the run ends
(running agents, the root) is made final then.

A run is indexed only when the reasoning of `frame_cut` holds plainly (`NotIndexable` says why
not): every event well-formed (restore skips nothing), stored in time order, no span id or callId
used by two agents (a later one would replace the first where the short walk could not know; the
store checks callIds once the frames are written, `DUPLICATE_CALL_ID`). Other runs are rewound by
`restore_snapshot` over their events: slower, the same snapshot.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, Final

from devtool.core.budget import BudgetTotals, PlacedTotals, merged
from devtool.core.frame_index_records import (
    DUPLICATE_CALL_ID,
    NO_PARENT,
    ROOT,
    Batch,
    IndexedChunk,
    IndexedFrame,
    NotIndexable,
    RunIndex,
    Sink,
)
from devtool.core.hash_set import HashSet
from devtool.core.jsonvalue import JSON
from devtool.core.restore_frames import RestoredFrame
from devtool.core.restore_timeline import Event, Skipped
from devtool.core.restore_walk import Walk, _Run, usable
from devtool.core.snapshot import ROOT_CALL_ID, Status
from devtool.core.snapshot_tree import FANOUT, Node, NodeCounts, child_refs, node_id, referenced, subtree_counts

# Frames handed to the sink at a time (with their nodes, ~2.6 KB each in a generated run): a store
# writes a batch in a transaction, and holds it in memory until its commit.
BATCH: Final = 500
_COMPACT: Final = 4096  # frames made final between two prunings of the walk's stack of agents


def index_run(rows: Iterable[tuple[int, Event]]) -> RunIndex:
    """`index_stream` collected whole, with the check of callIds a store makes of the frames it wrote."""
    batches: list[Batch] = []
    events = index_stream(rows, batches.append)
    frames = sorted((frame for batch in batches for frame in batch.frames), key=lambda frame: frame.index)
    seen: set[tuple[int, str]] = set()
    for frame in frames:
        if (frame.parent, frame.call_id) in seen:
            raise NotIndexable(DUPLICATE_CALL_ID.format(call_id=frame.call_id[:80]))
        seen.add((frame.parent, frame.call_id))
    chunks = [chunk for batch in batches for chunk in batch.chunks]
    nodes = {key: node for batch in batches for key, node in batch.nodes.items()}
    return RunIndex(frames, chunks, nodes, events)


def index_stream(rows: Iterable[tuple[int, Event]], sink: Sink, *, batch: int = BATCH) -> int:
    """Index one run from its `(event_id, event)` rows in restore order (time, then id), without
    the types restore ignores, handing what is final to `sink` about `batch` frames at a time;
    return how many events were walked. `NotIndexable` when the run is not one a rewind can be made
    from (what was handed over is then of no use)."""
    walk = _IndexWalk(Skipped(), sink, batch)
    previous, earliest = -1, -math.inf
    stamp: Any
    count = 0
    for event_id, event in rows:
        count += 1
        if event_id <= previous:
            raise NotIndexable("its events are not stored in time order")
        previous = event_id
        stamp = event.get("timestamp")
        if not usable(event) or event["type"] not in walk.actions or type(stamp) not in (int, float) or stamp != stamp:
            raise NotIndexable(f"event {event_id} is not one restore reads (malformed, or of an unknown type)")
        # Restore reads by time, the index by id: a walk in id order is restore's only if time never goes back.
        if stamp < earliest:
            raise NotIndexable(f"its events are not stored in time order (event {event_id} is earlier than the last)")
        earliest = stamp
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
    walk.finish()
    return count


class _Owners(dict[str, RestoredFrame]):
    """The walk's span map, which forgets the spans of final frames but knows them still: an event
    that reaches one would change a frame already handed over."""

    def __init__(self) -> None:
        super().__init__()
        self.sealed = HashSet()  # hashes of the forgotten spans (a collision only refuses the index)

    def __setitem__(self, span: str, frame: RestoredFrame) -> None:
        super().__setitem__(span, frame)
        if isinstance(frame, _Tracked):
            frame.spans.append(span)

    def get(self, span: str, default: Any = None) -> Any:
        found = super().get(span)
        if found is None:
            self._check(span)
            return default
        return found

    def __contains__(self, span: object) -> bool:
        if super().__contains__(span):
            return True
        self._check(span)
        return False

    def forget(self, frame: _Tracked) -> None:
        for span in frame.spans:
            if super().get(span) is frame:
                del self[span]
                self.sealed.add(hash(span))
        frame.spans = []

    def _check(self, span: object) -> None:
        if isinstance(span, str) and hash(span) in self.sealed:
            raise NotIndexable(f"an event reaches span {span[:40]!r} of an agent after it ended")


class _Kids:
    """A frame's children as they are added and become final: final ones wait in `entries` until
    their chunk is full and all final, then become that chunk (`known`), and so on up the levels.
    A level is folded only once the frame has more children than the level below holds (before
    that, a frame's node lists the level below, or its children themselves)."""

    __slots__ = ("acc", "chunk_totals", "count", "entries", "known", "totals", "unsealed")

    def __init__(self) -> None:
        self.count = 0
        self.unsealed = 0
        self.entries: dict[int, tuple[str, str]] = {}
        self.known: dict[tuple[int, int], str] = {}
        # The usage of each final child waiting in `entries` (by position; absent: its node has none),
        # and of each chunk in `known`: a cut that reuses a chunk reads its usage, not its frames'.
        self.totals: dict[int, BudgetTotals] = {}
        self.chunk_totals: dict[tuple[int, int], BudgetTotals] = {}
        self.acc: dict[tuple[int, int], list[Any]] = {}  # (level, position) -> [final members, last, running]

    def add(self, walk: _IndexWalk, frame: int) -> int:
        position = self.count
        self.count += 1
        self.unsealed += 1
        level = 0
        while FANOUT ** (level + 1) < self.count:
            if self.count == FANOUT ** (level + 1) + 1:  # the level is in use from now: fold its first chunk
                self._fold(walk, frame, level, 0)
            level += 1
        return position

    def sealed(self, walk: _IndexWalk, frame: int, child: _Tracked, key: str, totals: BudgetTotals | None) -> None:
        self.unsealed -= 1
        self.entries[child.position] = (child.call_id, key)
        if totals is not None:
            self.totals[child.position] = totals
        self._member(walk, frame, 0, child.position // FANOUT, child.last, child.status == "running")

    def refs(self, nodes: dict[str, Node]) -> dict[str, str] | list[str]:
        return child_refs(self.count, self.entries.__getitem__, self.known, nodes)

    def _member(self, walk: _IndexWalk, frame: int, level: int, position: int, last: int, running: bool) -> None:
        acc = self.acc.setdefault((level, position), [0, 0, False])
        acc[0] += 1
        acc[1] = max(acc[1], last)
        acc[2] = acc[2] or running
        self._fold(walk, frame, level, position)

    def _fold(self, walk: _IndexWalk, frame: int, level: int, position: int) -> None:
        acc = self.acc.get((level, position))
        if acc is None or acc[0] < FANOUT or self.count <= FANOUT ** (level + 1):
            return
        first = position * FANOUT
        node: Node
        parts: list[BudgetTotals | None]
        if level == 0:
            node = {"chunk": 0, "children": {}}
            for index in range(first, first + FANOUT):
                call_id, key = self.entries.pop(index)
                node["children"][call_id] = key
            parts = [self.totals.pop(index, None) for index in range(first, first + FANOUT)]
        else:
            node = {"chunk": level, "chunks": [self.known.pop((level - 1, i)) for i in range(first, first + FANOUT)]}
            parts = [self.chunk_totals.pop((level - 1, i)) for i in range(first, first + FANOUT)]
        key = node_id(node)
        self.known[(level, position)] = key
        totals = self.chunk_totals[(level, position)] = merged(part for part in parts if part is not None)
        del self.acc[(level, position)]
        walk.chunk(IndexedChunk(frame, level, position, acc[1], acc[2], key, totals), node)
        self._member(walk, frame, level + 1, position // FANOUT, acc[1], acc[2])


class _Tracked(RestoredFrame):
    """A frame of the index walk: what the index records of it, and its children being folded."""

    __slots__ = ("ended", "events", "index", "kids", "last", "parent", "position", "spans", "usage", "walk")

    def __init__(self, call_id: str, agent_id: str, walk: _IndexWalk) -> None:
        super().__init__(call_id, agent_id)
        self.walk = walk
        self.parent: _Tracked | None = None
        self.index = self.position = -1
        self.last = 0
        self.ended = False  # its own end came (an ancestor's end only fails it: its own may follow)
        self.events: list[int] = []
        self.spans: list[str] = []
        self.kids = _Kids()
        self.usage = PlacedTotals()  # of its children that are final (no longer among `children`)

    def aggregate_totals(self) -> BudgetTotals:
        placed = [
            (child.position if isinstance(child, _Tracked) else -1, child.aggregate_totals())
            for child in self.children.values()
        ]
        return self.usage.merged_with([(-1, self.budget.totals()), *placed])

    def add_child(self, child: RestoredFrame) -> None:
        if isinstance(child, _Tracked):
            child.parent = self
            child.position = self.kids.add(self.walk, self.index)
        super().add_child(child)

    def settle(self, status: Status, output: JSON, error: JSON) -> None:
        super().settle(status, output, error)
        self.ended = True

    def abandon(self, message: str) -> None:
        super().abandon(message)
        self.walk.changed(self)


class _IndexWalk(Walk):
    """`Walk` over a whole run, recording what each event did to which frame and handing over the
    frames that are final."""

    def __init__(self, skipped: Skipped, sink: Sink, batch: int) -> None:
        super().__init__(skipped)
        self.owners = _Owners()
        self.owner = self.owners
        self.now = 0
        self.frames = 0
        self.sink, self.size = sink, batch
        self.batch = Batch()
        self.open: dict[int, _Tracked] = {}  # frames not final yet, by index
        self.sealed = 0
        self.counts: dict[str, NodeCounts] = {}  # of nodes handed over whose parent is not final yet

    def new_frame(self, call_id: str, agent_id: str) -> RestoredFrame:
        frame = _Tracked(call_id, agent_id, self)
        frame.index, frame.last = self.frames, self.now
        self.frames += 1
        self.open[frame.index] = frame
        return frame

    def _run_of(self, trace: dict[str, Any]) -> _Run:
        run = self.runs.get(trace.get("traceId"))
        if run is None:
            if self.runs:
                raise NotIndexable("its events belong to several runs (trace ids)")
            run = super()._run_of(trace)
            run.root = self.new_frame(ROOT_CALL_ID, "")  # the root is frame 0, made with the run
        return run

    def applied(self, frame: RestoredFrame, event_id: int) -> None:
        if not isinstance(frame, _Tracked) or frame.index not in self.open:
            raise NotIndexable(f"event {event_id} reaches a frame that had ended")
        frame.events.append(event_id)
        frame.last = event_id
        if frame.ended:
            self._seal_up(frame)

    def changed(self, frame: RestoredFrame) -> None:
        if isinstance(frame, _Tracked):
            frame.last = self.now

    def chunk(self, chunk: IndexedChunk, node: Node) -> None:
        self.batch.chunks.append(chunk)
        self._node(node, chunk.node)

    def finish(self) -> None:
        """Make final what the run leaves open (children before parents), and hand over the rest."""
        if not self.open:
            raise NotIndexable("no agent started in it")
        for index in sorted(self.open, reverse=True):  # a child is made after its parent
            self._seal(self.open[index])
        self._flush()

    def _seal_up(self, frame: _Tracked) -> None:
        """Hand `frame` over if it is final now, then its ancestors that this makes final."""
        current: _Tracked | None = frame
        while current is not None and current.ended and not current.kids.unsealed and current.index != ROOT:
            parent = current.parent
            self._seal(current)
            current = parent

    def _seal(self, frame: _Tracked) -> None:
        key = ""  # the root is rebuilt at every cut: it has no node
        aggregate: BudgetTotals | None = None
        if frame.index != ROOT:
            chunks: dict[str, Node] = {}
            shaped = frame.shaped({})
            aggregate = shaped["budgetState"]["aggregate"]
            node = dict(shaped)
            node["children"] = frame.kids.refs(chunks)  # in its place among the keys
            for chunk_key, chunk in chunks.items():
                self._node(chunk, chunk_key)
            key = node_id(node)
            self._node(node, key)
        del self.open[frame.index]
        parent = frame.parent
        self.batch.frames.append(
            IndexedFrame(
                index=frame.index,
                parent=parent.index if parent is not None else NO_PARENT,
                position=frame.position,
                call_id=frame.call_id,
                created=frame.events[0] if frame.index != ROOT else 0,
                last=frame.last,
                events=tuple(frame.events),
                node=key,
                status=frame.status,
                error=frame.error,
                aggregate=aggregate,
            )
        )
        if parent is not None:
            parent.usage.add(frame.position, frame.aggregate_totals())
            parent.last = max(parent.last, frame.last)
            parent.kids.sealed(self, parent.index, frame, key, aggregate)
            if parent.children.get(frame.call_id) is frame:
                del parent.children[frame.call_id]
        self.owners.forget(frame)
        # What a final frame held is in its node now: nothing but the walk's stack of agents keeps it.
        frame.memory, frame.prompt, frame.tool, frame.children, frame.events = {}, {}, {}, {}, []
        frame.kids = _Kids()
        self.sealed += 1
        if self.sealed % _COMPACT == 0:
            # The stack only ever answers with a running agent: the ended ones need not wait to be popped.
            for run in self.runs.values():
                run.open = [agent for agent in run.open if agent.status == "running"]
        if len(self.batch.frames) >= self.size:
            self._flush()

    def _node(self, node: Node, key: str) -> None:
        counts = subtree_counts(node, [self.counts.pop(child) for child in referenced(node)])
        self.counts[key] = self.batch.counts[key] = counts
        self.batch.nodes[key] = node

    def _flush(self) -> None:
        if self.batch.frames or self.batch.nodes:
            self.sink(self.batch)
        self.batch = Batch()
