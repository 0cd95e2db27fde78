"""The walk of `restore_snapshot`: one pass over a run's sorted events, each applied to the frame it
changes, up to the cut; then the root settled and the snapshot's envelope.

What each event type does to the frames is `restore.py`'s to state (its docstring holds the rules);
this module is how: the dispatch table from event type to action, the per-run state (root frame,
agents started, each span's owner frame) and the checks of the cut. `Walk` is shared: a restore is
one walk over every event, and a frame index (`frame_index`) walks a run once to learn which
events each frame depends on, then walks only those of the frames a cut leaves open.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, Literal

from devtool.core.errors import RestoreError
from devtool.core.events import EVENTS, SCHEMA_VERSION
from devtool.core.restore_frames import RestoredFrame
from devtool.core.restore_timeline import Event, Skipped
from devtool.core.snapshot import ROOT_CALL_ID, SNAPSHOT_VERSION, JournalRecord, Status

Anchor = Literal["before", "after"]
Trace = dict[str, Any]
# An event's action returns the frame it was applied to (None when it changed nothing): a frame
# index (`frame_index`) records it to tell which events a frame's state depends on.
Action = Callable[[Event, Trace, str], RestoredFrame | None]

# Events that hold no state a snapshot needs and parent no span that does: passed over at once.
LEAVES: Final = (
    EVENTS.TURN_PROGRESS,
    EVENTS.MODEL_CALL_START,
    EVENTS.VALIDATION_FAILURE,
    EVENTS.SNAPSHOT_DUMP,
    EVENTS.ERROR,
    "validation:success",
    "budget:update",
    "sys:log",
    "agent:reborn",
)
# Spans that parent others (generation, prompt loop, tool batch, custom spans): only remembered.
_PARENTS: Final = (
    EVENTS.TURN_START,
    EVENTS.GENERATION_START,
    EVENTS.PROMPT_START,
    EVENTS.PROMPT_END,
    EVENTS.TOOLS_EXECUTE_START,
    "custom:span:start",
    "custom:span:end",
)


class _Run:
    """What the walk knows of one run (traceId): its root frame and the agents started in it."""

    __slots__ = ("from_run_with", "open", "root")

    def __init__(self) -> None:
        self.root = RestoredFrame(ROOT_CALL_ID, "")
        self.from_run_with = False
        # Agent frames in start order; ended ones are dropped lazily when they reach the top.
        self.open: list[RestoredFrame] = []

    def innermost(self) -> RestoredFrame:
        """The agent that started last and is still running, else the root: the stack-order guess."""
        stack = self.open
        while stack and stack[-1].status != "running":
            stack.pop()
        return stack[-1] if stack else self.root


class Walk:
    """One pass over the sorted events up to the cut, building frames as it goes.

    `restore_snapshot` is one walk over every event; a frame index (`frame_index`) walks a whole
    run once to learn which events each frame depends on, and a rewind then walks only those of the
    frames its cut leaves open.
    """

    def __init__(self, skipped: Skipped) -> None:
        self.skipped = skipped
        self.runs: dict[Any, _Run] = {}
        # Each span that holds state or parents one, to the frame it belongs to.
        self.owner: dict[str, RestoredFrame] = {}
        self.actions: dict[str, Action | None] = {
            **dict.fromkeys(LEAVES),
            **dict.fromkeys(_PARENTS, self._remember),
            EVENTS.RUN_WITH_START: self._run_with_start,
            EVENTS.RUN_WITH_END: self._run_with_end,
            EVENTS.AGENT_START: self._agent_start,
            EVENTS.AGENT_END: self._agent_end,
            EVENTS.GENERATION_END: self._generation_end,
            EVENTS.TURN_END: self._turn_end,
            EVENTS.TOOLS_EXECUTE_END: self._tools_end,
            EVENTS.MODEL_CALL_END: self._model_call_end,
        }

    def run(self, events: list[Event], span_id: str | None, anchor: Anchor) -> Event:
        """Apply every event up to the cut and return the cut event."""
        actions, skipped, unknown = self.actions, self.skipped, self._unknown
        before = anchor == "before"
        seen = ""
        skipped_before = skipped.count
        for position, event in enumerate(events):
            try:
                trace = event["trace"]
                span = trace["spanId"]
                kind = event["type"]
                action = actions.get(kind, unknown)
            except (KeyError, TypeError):  # no trace, a trace that is not an object, an unhashable type
                span = None
            if type(span) is not str:
                skipped.add("without a trace context (trace.spanId) or a type", _where(event))
                continue
            if event.get("schemaVersion") != SCHEMA_VERSION:
                _check_version(event, skipped)
                continue
            if span == span_id:
                name = str(kind)
                seen = seen or name
                if before and name.endswith(":start"):
                    self._check_not_first(events, position, trace, span)
                    return event
                if not before and name.endswith(":end"):
                    if action is not None:
                        action(event, trace, span)
                    return event
            if action is not None:
                action(event, trace, span)
        if skipped.count - skipped_before == len(events):
            raise RestoreError("Restore failed: Trace is empty." + skipped.explain(" It has no usable event: "))
        if span_id is not None:
            raise RestoreError(_span_not_found(span_id, before, seen))
        return next(event for event in reversed(events) if usable(event))

    def settled_root(self, cut: Event) -> RestoredFrame:
        """The root frame of the run the cut event belongs to, its status settled, or `RestoreError`
        when no agent had started in that run at the cut."""
        run = self.runs.get(cut["trace"].get("traceId"))
        if run is None or run.root.is_empty():
            raise RestoreError(
                "Restore failed: Root agent frame not created: no agent had started at this cut, so there is "
                "nothing to restore (to retry the whole run, run it again without a snapshot)."
                + self.skipped.explain(" The trace also had ")
            )
        root = run.root
        if not run.from_run_with:
            root.status, root.error = _synthetic_root_status(root)
        return root

    def envelope(self, cut: Event, anchor: Anchor, root: Any) -> dict[str, Any]:
        """The snapshot document around `root`: the root frame, or (stored as a tree) its node id."""
        trace = cut["trace"]
        trace_id = trace.get("traceId")
        process = trace_id if isinstance(trace_id, str) else ""
        return {
            "processId": process,
            "timestamp": cut["timestamp"],
            "root": root,
            "provenance": {"traceId": process, "spanId": trace["spanId"], "anchor": anchor, "source": "restore"},
            "version": SNAPSHOT_VERSION,
        }

    def new_frame(self, call_id: str, agent_id: str) -> RestoredFrame:
        """A frame for an agent call that just started (a frame index tracks what happens to it)."""
        return RestoredFrame(call_id, agent_id)

    def _run_of(self, trace: Trace) -> _Run:
        trace_id = trace.get("traceId")
        run = self.runs.get(trace_id)
        if run is None:
            run = self.runs[trace_id] = _Run()
        return run

    def _parent(self, trace: Trace) -> RestoredFrame:
        """The frame a span belongs to: its parent span's, else the stack-order guess."""
        parent = trace.get("parentSpanId")
        frame = self.owner.get(parent) if type(parent) is str else None
        return frame or self._run_of(trace).innermost()

    def _check_not_first(self, events: list[Event], position: int, trace: Trace, span: str) -> None:
        trace_id = trace.get("traceId")
        for index in range(position - 1, -1, -1):
            context = events[index].get("trace")
            if type(context) is dict and context.get("traceId") == trace_id:
                return
        raise RestoreError(
            f'Restore failed: Target span "{span}" START event is at the beginning of trace, cannot restore before it.'
        )

    def _remember(self, event: Event, trace: Trace, span: str) -> RestoredFrame | None:
        if span in self.owner:
            return None
        frame = self.owner[span] = self._parent(trace)
        return frame

    def _unknown(self, event: Event, trace: Trace, span: str) -> RestoredFrame | None:
        self.skipped.add(f"of unknown type {event['type']!r}", _where(event))
        # Still a span: what starts inside it belongs where it does.
        return self._remember(event, trace, span)

    def _run_with_start(self, event: Event, trace: Trace, span: str) -> RestoredFrame:
        run = self._run_of(trace)
        run.from_run_with = True
        self.owner[span] = run.root
        return run.root

    def _run_with_end(self, event: Event, trace: Trace, span: str) -> RestoredFrame:
        root = self._run_with_start(event, trace, span)
        memory = event.get("memory")
        if type(memory) is dict:
            root.memory = memory
        root.settle(*_outcome(event))
        return root

    def _agent_start(self, event: Event, trace: Trace, span: str) -> RestoredFrame | None:
        agent_id = event.get("agentId")
        if type(agent_id) is not str:
            self.skipped.add("without an agentId", _where(event))
            return None
        parent = self._parent(trace)
        call_id = event.get("callId")
        if type(call_id) is not str or not call_id:
            call_id = parent.child_call_id(agent_id)
        frame = self.owner[span] = self.new_frame(call_id, agent_id)
        parent.add_child(frame)
        self._run_of(trace).open.append(frame)
        return frame

    def _agent_end(self, event: Event, trace: Trace, span: str) -> RestoredFrame | None:
        frame = self.owner.get(span)
        if frame is None:  # its start is not in the trace: the end repeats the start's fields
            frame = self._agent_start(event, trace, span)
            if frame is None:
                return None
        frame.settle(*_outcome(event))
        return frame

    def _generation_end(self, event: Event, trace: Trace, span: str) -> RestoredFrame | None:
        memory = event.get("memory")
        if type(memory) is not dict:
            return None
        frame = self.owner.get(span) or self._parent(trace)
        frame.memory = memory
        return frame

    def _turn_end(self, event: Event, trace: Trace, span: str) -> RestoredFrame | None:
        digest = event.get("contentHash")
        # An instrumented SDK request journals the provider's response, which its end carries.
        output = event["response"] if "response" in event else event.get("message")
        if event.get("success") is not True or type(digest) is not str or output is None:
            return None
        frame = self._parent(trace)
        frame.prompt[digest] = {"output": output, "contentHash": digest}
        return frame

    def _model_call_end(self, event: Event, trace: Trace, span: str) -> RestoredFrame | None:
        frame = self._parent(trace)
        return frame if frame.budget.add_event(event) else None

    def _tools_end(self, event: Event, trace: Trace, span: str) -> RestoredFrame | None:
        results = event.get("toolResults")
        if type(results) is not list:
            self.skipped.add("without a toolResults list", _where(event))
            return None
        frame = self.owner.get(span) or self._parent(trace)
        journal = frame.tool
        for result in results:
            if type(result) is dict and result.get("success") is True:
                digest = result.get("contentHash")
                if type(digest) is str:
                    journal[digest] = _tool_record(result, digest)
        return frame


def _check_version(event: Event, skipped: Skipped) -> None:
    version = event.get("schemaVersion")
    if type(version) is int or type(version) is float:
        raise RestoreError(
            f"Restore failed: trace event schema version {version} does not match this build's {SCHEMA_VERSION}. "
            f"(First at the {event.get('type')!r} event at timestamp {event.get('timestamp')}: the trace was "
            "written by a version of the library this build does not know.)"
        )
    skipped.add("without a schemaVersion number", _where(event))


def _span_not_found(span_id: str, before: bool, seen: str) -> str:
    if not seen:
        why = "no event has this span id"
    elif before or not seen.endswith(":start"):
        why = f"its events ({seen}) have no {'start' if before else 'end'}"
    else:
        why = (
            f"the span started ({seen}) but its end is not in the trace (it was still running when the trace "
            'stops); restore it with anchor="before", or without span_id for the latest state'
        )
    edge = "START" if before else "END"
    return f'Restore failed: Target span "{span_id}" {edge} event not found in trace: {why}.'


def _tool_record(result: dict[str, Any], digest: str) -> JournalRecord:
    if result.get("tombstone") is not True:
        return {"output": result.get("output"), "contentHash": digest}
    # The runtime's tombstone text (`Frame.record`), from the description the event carries.
    output = result.get("output")
    reason = output.get("$notJson") if type(output) is dict else None
    return {"output": None, "contentHash": digest, "error": f"not replayable: {reason or 'the output was not JSON'}"}


def _outcome(event: Event) -> tuple[Status, Any, Any]:
    error = event.get("error")
    success = event.get("success")
    if success is False or (success is not True and error is not None):
        if not error:
            error = {"name": "Error", "message": f"{event.get('type')} reports a failure but no error"}
        return "failed", None, error
    return "completed", event.get("result"), None


def _synthetic_root_status(root: RestoredFrame) -> tuple[Status, Any]:
    """No runWith events: running while a top-level agent runs, else the last one's outcome."""
    children = list(root.children.values())
    if not children or any(child.status == "running" for child in children):
        return "running", None
    last = children[-1]
    return last.status, last.error


def usable(event: Event) -> bool:
    """What the walk accepts: a trace context with a span id, a type, our schemaVersion."""
    trace = event.get("trace")
    return (
        type(trace) is dict
        and type(trace.get("spanId")) is str
        and "type" in event
        and event.get("schemaVersion") == SCHEMA_VERSION
    )


def _where(event: Any) -> str:
    if not isinstance(event, dict):
        return repr(event)[:60]
    return f"type {event.get('type')!r} at timestamp {event.get('timestamp')}"
