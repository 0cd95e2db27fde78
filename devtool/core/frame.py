"""The running context: one frame per agent call, the ContextVar that holds the current one.

A `Run` is what one `run_with` shares with every frame under it (trace id, sinks, whether
snapshots are on). A `Frame` is one agent call: its callId, memory, journal, children and status.
The current frame lives in a single ContextVar, set and reset with tokens around each agent call,
so asyncio tasks (parallel sub-agents, tool batches) each see the frame they were started in.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import itertools
import threading
import weakref
from collections.abc import Iterator, MutableMapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from devtool.core.budget import Budget
from devtool.core.errors import OutsideRunError
from devtool.core.events import Emitter, ErrorInfo, FrameOutcome, TraceEvent, error_info
from devtool.core.jsonvalue import JSON, NotJSONError, describe, json_copy
from devtool.core.lookups import Lookup, LookupKind, Observer
from devtool.core.providers.pricing import PriceTable, default_price_table
from devtool.core.snapshot import FrameJournal, FrameSnapshot, JournalRecord, Status, with_budget_states

if TYPE_CHECKING:
    from devtool.core.model import Model

CURRENT_FRAME: ContextVar[Frame] = ContextVar("devtool_current_frame")
# The tool call running now, as (its frame, its `tools:execute` span): an agent started inside a tool
# (a framework's agent-as-a-tool) hangs under that span, not beside it.
TOOL_SPAN: ContextVar[tuple[Frame, str] | None] = ContextVar("devtool_tool_span", default=None)


@dataclass(frozen=True)
class Run:
    """What every frame of one `run_with` shares."""

    trace_id: str
    emitter: Emitter
    enable_snapshot: bool
    # Usage of every model call in the run, counted even when snapshots (and so child frames) are off.
    budget: Budget = field(default_factory=Budget)
    # Told of every journal lookup before the call is answered (`lookups.py`); raising there stops the call.
    observe: Observer | None = None
    # A counterfactual fork's edits by call path (`counterfactual.edits_of`): what those calls return instead.
    edits: dict[str, dict[str, JSON]] = field(default_factory=dict)

    @functools.cached_property
    def prices(self) -> PriceTable:
        """The price table the run's instrumented requests are priced from (`DEVTOOL_PRICES` as it was
        at the first: the environment is read once a run, not once a request)."""
        return default_price_table()

    def first_report(self, error: BaseException) -> bool:
        """True the first time `error` passes a frame of this run: one `error` event where it arose."""
        # Exceptions cannot be weakly referenced, and a set of them would keep every one alive:
        # mark the exception itself instead.
        if getattr(error, "_devtool_reported_in", None) == self.trace_id:
            return False
        # An exception type with __slots__ cannot be marked: it is reported in each frame it passes.
        with contextlib.suppress(AttributeError):
            error._devtool_reported_in = self.trace_id  # type: ignore[attr-defined]
        return True


class Memory(MutableMapping[str, JSON]):
    """A frame's memory: a mapping whose values must be JSON, so a snapshot can hold it."""

    def __init__(self, initial: dict[str, JSON] | None = None) -> None:
        self._data: dict[str, JSON] = dict(initial or {})

    def __getitem__(self, key: str) -> JSON:
        return self._data[key]

    def __setitem__(self, key: str, value: JSON) -> None:
        if type(key) is not str:
            raise TypeError(f"memory keys are strings, got {key!r}")
        try:
            json_copy(value, f"memory[{key!r}]")
        except NotJSONError as exc:
            raise TypeError(f"{exc}; memory holds JSON values only") from None
        self._data[key] = value

    def __delitem__(self, key: str) -> None:
        del self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"Memory({self._data!r})"

    def to_json(self) -> dict[str, JSON]:
        """A deep copy; a value mutated in place into something that is not JSON is described."""
        if not self._data:  # most frames' (every framework's): no comprehension's call to make
            return {}
        return {key: describe(value) for key, value in self._data.items()}


# What a frame that restores nothing replays from, and its restored children: shared, never written.
_NOTHING_TO_REPLAY: FrameJournal = {"prompt": {}, "tool": {}}
_NO_CHILDREN: dict[str, FrameSnapshot] = {}

# Taken while calls started together reserve their seqs (`Frame.ordered_call_id`), from any thread.
_RESERVING = threading.Lock()


class Frame:
    """One agent call (or the run's root) while it runs, and after, until the run ends."""

    def __init__(
        self,
        *,
        run: Run,
        call_id: str,
        agent_id: str,
        span_id: str,
        parent: Frame | None,
        model: Model | None,
        restored: FrameSnapshot | None,
    ) -> None:
        self.run = run
        self.call_id = call_id
        self.agent_id = agent_id
        # Weak: a parent holds its children (`children`), so a strong link back would make every run's
        # frame tree a cycle that only the garbage collector frees, promoted with the process's
        # long-lived objects and paid for in full collections (BENCHMARKS.md, issue 38). The root is
        # held by its run's scope, and each frame by its parent, so a frame's parent lives as long as
        # its tree is reachable.
        self._parent = None if parent is None else weakref.ref(parent)
        self.model = model
        # Spans started in this frame (generation, prompts, tools, sub-agents) hang under this one.
        self.span_id = span_id
        self.memory = Memory(copy.deepcopy(restored["memory"]) if restored else None)
        # The snapshot's entries are the replay cache; `journal` starts with them and gains what this
        # run records, so a dump taken during a replay holds both. A new frame's are empty: no copy
        # (a frame is made for every agent call, a framework's node runs too), and nothing to replay
        # shared by every such frame (only read), not made again: dicts that live as long as the run
        # are what its young collections walk (BENCHMARKS.md, issue 38).
        self.replay: FrameJournal = restored["journal"] if restored else _NOTHING_TO_REPLAY
        self.journal: FrameJournal = copy.deepcopy(self.replay) if restored else {"prompt": {}, "tool": {}}
        self.restored_children: dict[str, FrameSnapshot] = restored["children"] if restored else _NO_CHILDREN
        self.children: dict[str, Frame] = {}
        self.status: Status = "running"
        self.output: JSON = None
        self.error: ErrorInfo | None = None
        self.budget = Budget()
        self._counters: dict[str, itertools.count[int]] = {}
        # `ordered_call_id`'s reservations: kind:configId -> the calls started together -> (first seq, taken);
        # made at the first (most frames have none).
        self._together: dict[str, dict[tuple[str, ...], tuple[int, set[str]]]] | None = None

    @property
    def parent(self) -> Frame | None:
        """The frame this one was started in; None for the root (or once the tree above is gone)."""
        return None if self._parent is None else self._parent()

    def next_call_id(self, kind: str, config_id: str) -> str:
        """`<callId>/<kind>:<configId>:<seq>`, seq counting per frame per kind:configId in call order."""
        key = f"{kind}:{config_id}"
        # Threads handed this frame's context (`asyncio.to_thread`, an executor with `copy_context`) take
        # ids too: `setdefault` and `next` of a counter are each one step under the GIL, so none repeats.
        counter = self._counters.get(key) or self._counters.setdefault(key, itertools.count())
        return f"{self.call_id}/{key}:{next(counter)}"

    def ordered_call_id(self, kind: str, config_id: str, together: tuple[str, ...], member: str) -> str:
        """The callId of `member`, one of calls started together (`together`: their ids in the order
        that should number them, a model's tool calls in its order), whichever thread starts first: the
        first to start takes a seq for each at once, and each takes the one at its place, so threads
        that start in any order number them as a run and its replay both do."""
        key = f"{kind}:{config_id}"
        with _RESERVING:
            if self._together is None:
                self._together = {}
            reserved = self._together.setdefault(key, {})
            first, taken = reserved.get(together, (0, {member}))
            if member in taken:  # new, or the same ids asked again (a later turn): a reservation of its own
                counter = self._counters.get(key) or self._counters.setdefault(key, itertools.count())
                first, taken = next(counter), set()
                for _ in together[1:]:
                    next(counter)
                reserved[together] = (first, taken)
            taken.add(member)
        return f"{self.call_id}/{key}:{first + together.index(member)}"

    def cached(self, kind: LookupKind, content_hash: str | None, *, call_id: str, request: Any) -> JournalRecord | None:
        """The recorded output for this input, from the snapshot being replayed (a fork's edit of this call
        first: `counterfactual.py`); tombstones never match.
        The run's observer, if any, hears of the lookup first (and may refuse the call by raising)."""
        entry: JournalRecord | None = None
        edit = self.run.edits.get(call_id) if self.run.edits else None
        if edit is not None and "output" in edit:
            entry = {"output": edit["output"], "contentHash": content_hash or ""}
        elif edit is not None and "live" in edit:
            pass  # dropped by the fork: the call runs again
        elif content_hash is not None:
            entry = self.replay["prompt" if kind == "prompt" else "tool"].get(content_hash)
            if entry is not None and "error" in entry:
                entry = None
        if self.run.observe is not None:
            self.run.observe(Lookup(kind, self.agent_id, call_id, content_hash, request, entry is not None))
        return entry

    def record(self, kind: str, content_hash: str | None, output: Any, *, fresh: bool = False) -> bool:
        """Journal `output` under its input's hash; a non-JSON output becomes a tombstone. True if JSON.
        `fresh`: `output` is JSON that nothing else holds (just parsed), journaled without a copy."""
        if content_hash is None or not self.run.enable_snapshot:
            return True
        journal = self.journal["prompt" if kind == "prompt" else "tool"]
        if fresh:
            journal[content_hash] = {"output": output, "contentHash": content_hash}
            return True
        try:
            journal[content_hash] = {"output": json_copy(output), "contentHash": content_hash}
        except NotJSONError as exc:
            journal[content_hash] = {"output": None, "contentHash": content_hash, "error": f"not replayable: {exc}"}
            return False
        return True

    def settle(self, result: Any = None, error: BaseException | None = None) -> FrameOutcome:
        """The frame's outcome: its status and output or error, and the fields its end events carry."""
        if error is not None:
            info = error_info(error)
            self.status, self.error = "failed", info
            return {"success": False, "error": info}
        self.status, self.output = "completed", result
        return {"success": True, "result": describe(result)}

    def emit(self, event: TraceEvent) -> None:
        self.run.emitter.emit(event)

    def effective_model(self) -> Model | None:
        frame: Frame | None = self
        while frame is not None:
            if frame.model is not None:
                return frame.model
            frame = frame.parent
        return None

    def subtree_budget(self) -> Budget:
        return Budget.combined([self.budget, *(child.subtree_budget() for child in self.children.values())])

    def to_snapshot(self) -> FrameSnapshot:
        """This frame and its descendants as a JSON-ready, deep-copied snapshot frame (the run's deferred
        work done first: it journals and counts usage)."""
        with self.run.emitter.settled():
            return self._snapshot()

    def _snapshot(self) -> FrameSnapshot:
        children: dict[str, FrameSnapshot] = {
            call_id: cast(FrameSnapshot, with_budget_states(copy.deepcopy(cast(dict[str, Any], child))))
            for call_id, child in self.restored_children.items()
        }
        children.update((call_id, child._snapshot()) for call_id, child in self.children.items())
        frame: FrameSnapshot = {
            "callId": self.call_id,
            "agentId": self.agent_id,
            "memory": self.memory.to_json(),
            "journal": copy.deepcopy(self.journal),
            "children": children,
            "state": {"status": self.status},
            "budgetState": {"own": self.budget.totals(), "aggregate": self.subtree_budget().totals()},
        }
        if self.status == "completed":
            frame["state"]["output"] = describe(self.output)
        elif self.status == "failed" and self.error is not None:
            frame["state"]["error"] = copy.deepcopy(self.error)
        return frame


def current_frame(what: str = "this") -> Frame:
    """The frame of the agent running now; `OutsideRunError` outside `run_with` and agents."""
    frame = CURRENT_FRAME.get(None)
    if frame is None:
        raise OutsideRunError(f"{what} must be called inside run_with() or an agent")
    return frame


def memory() -> Memory:
    """The current frame's memory (JSON values only); restored from the snapshot on a replay."""
    return current_frame("memory()").memory


def current_trace_id() -> str:
    """The trace id of the run the caller is in (what its events carry, and what a journal links to)."""
    return current_frame("current_trace_id()").run.trace_id
