"""Trace events: their names, their shape on the wire, and the emitter that hands them to sinks.

The wire format is the TypeScript library's (DESIGN.md, "Wire formats"), so traces load in either
direction. What we add: `callId` on agent, turn and tool events; on each tool result, `callPath` is our
callId (`callId` there is, as in the TypeScript library, the model's id for the tool call, or our
callId for a call no model asked for); `tools:execute:end` says `cache: true` when
every call of the batch was served from a snapshot; a result whose output is not JSON carries
`tombstone: true` (its `output` is a description, never to be replayed); `runWith:end` carries the root
frame's `memory`; `turn:progress` (no TypeScript counterpart) carries the text a streaming model has
answered so far in a running turn, in the turn's own span, at most every `PROGRESS_INTERVAL`
seconds: a live view shows it, and the turn's `turn:end` carries the whole message (nothing else
reads it: restore skips it, the journal never holds it); `model:call:end` carries `costs: null`
when the model's price is unknown (never `{}`, which would read as free), `usage.details` with
cache and reasoning tokens, `finishReason` and `ttft` as the TypeScript library names them; an
error's `details` holds a `CoreError`'s structured facts (a `ModelError`'s provider, status, code);
`runWith:start` carries the run's `name` when it was given one (`devtool.record`); the `turn:end` of
an instrumented SDK request carries, as `response`, the provider's answer it journaled (`turns.py`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from time import time as _time
from typing import Any, Final, Required, TypedDict

from devtool.core.drainer import DRAINER
from devtool.core.errors import CoreError
from devtool.core.jsonvalue import JSON
from devtool.core.model import Usage

SCHEMA_VERSION: Final = 1

logger = logging.getLogger("devtool.core")


class EVENTS:
    """The event type names (`EVENTS.AGENT_START == "agent:start"`)."""

    RUN_WITH_START: Final = "runWith:start"
    RUN_WITH_END: Final = "runWith:end"
    AGENT_START: Final = "agent:start"
    AGENT_END: Final = "agent:end"
    GENERATION_START: Final = "generation:start"
    GENERATION_END: Final = "generation:end"
    PROMPT_START: Final = "promptAgent:start"
    PROMPT_END: Final = "promptAgent:end"
    TURN_START: Final = "turn:start"
    TURN_END: Final = "turn:end"
    TURN_PROGRESS: Final = "turn:progress"
    MODEL_CALL_START: Final = "model:call:start"
    MODEL_CALL_END: Final = "model:call:end"
    TOOLS_EXECUTE_START: Final = "tools:execute:start"
    TOOLS_EXECUTE_END: Final = "tools:execute:end"
    VALIDATION_FAILURE: Final = "validation:failure"
    SNAPSHOT_DUMP: Final = "snapshot:dump"
    ERROR: Final = "error"


class TraceContext(TypedDict):
    traceId: str
    spanId: str
    parentSpanId: str


class ErrorInfo(TypedDict, total=False):
    name: Required[str]
    message: Required[str]
    stack: str
    details: dict[str, JSON]


class ToolResult(TypedDict, total=False):
    callId: Required[str]
    callPath: Required[str]
    toolName: Required[str]
    input: JSON
    output: JSON
    duration: float
    success: Required[bool]
    error: ErrorInfo
    cache: bool
    contentHash: str | None
    tombstone: bool


class AgentEventFields(TypedDict, total=False):
    """The keys only the agent and generation events (`agent:*`, `generation:*`) have: the TypeScript
    library's, most with no counterpart here (`agents.AgentScope` says what each means for us)."""

    scopeLayers: list[JSON]
    resourceKeys: list[str]
    maxReborns: int
    generationCount: int
    endReason: str
    draft: dict[str, list[JSON]]


class FrameOutcome(TypedDict, total=False):
    """How a frame ended, as its end events carry it: `success`, then its `result` or its `error`."""

    success: Required[bool]
    result: JSON
    error: ErrorInfo


class TraceEvent(AgentEventFields, total=False):
    """One event. The required keys are on every event; the rest depend on `type`."""

    schemaVersion: Required[int]
    type: Required[str]
    timestamp: Required[float]
    agentId: Required[str]
    trace: Required[TraceContext]
    callId: str
    props: JSON
    metadata: JSON
    config: JSON
    entrypoint: str
    name: str
    response: JSON
    generationId: int
    step: int
    messages: JSON
    schema: JSON
    toolConfig: JSON
    model: JSON
    message: JSON
    contentHash: str | None
    cache: bool
    messageCount: int
    resultType: str
    usage: Usage
    costs: dict[str, float] | None
    rawText: str
    toolCalls: JSON
    finishReason: str
    ttft: float
    text: str
    adapterId: str
    provider: str
    toolCallsCount: int
    toolNames: list[str]
    toolResults: list[ToolResult]
    successCount: int
    failureCount: int
    result: JSON
    memory: JSON
    duration: float
    success: bool
    error: ErrorInfo
    attempt: int
    snapshotId: str
    metrics: JSON


Sink = Callable[[TraceEvent], object]


def trace_event(
    kind: str, agent_id: str, trace_id: str, span_id: str, parent_span_id: str, **fields: Any
) -> TraceEvent:
    """An event of type `kind`, stamped now, in span `span_id` of trace `trace_id`."""
    event = event_head(kind, agent_id, trace_id, span_id, parent_span_id)
    event.update(fields)  # type: ignore[typeddict-item]
    return event


def event_head(
    kind: str, agent_id: str, trace_id: str, span_id: str, parent_span_id: str, timestamp: float | None = None
) -> TraceEvent:
    """The keys every event has, in their order, stamped now (or at `timestamp`): the caller adds the
    rest in place. What the events of every frame, turn and tool call are built from: their fields set
    on the one dict, not handed down as keywords (`trace_event`'s `**fields` through a caller's own
    `**fields` costs CPython a comparison of every keyword with every parameter's name, a dict made at
    each level and merged: a quarter of a frame's recording, BENCHMARKS.md, issue 38)."""
    return {
        "schemaVersion": SCHEMA_VERSION,
        "type": kind,
        "timestamp": _time() * 1000.0 if timestamp is None else timestamp,
        "agentId": agent_id,
        "trace": {"traceId": trace_id, "spanId": span_id, "parentSpanId": parent_span_id},
    }


def now_ms() -> float:
    """Milliseconds since the epoch, with microseconds: finer than the TS library's integer ms."""
    return time.time() * 1000.0


# When something happened, for an event built later (deferred work): its `timestamp` (`now_ms()`) and
# the `time.perf_counter()` durations are measured with.
Stamp = tuple[float, float]


def stamp() -> Stamp:
    return time.time() * 1000.0, time.perf_counter()


def error_info(exc: BaseException) -> ErrorInfo:
    """An exception as events carry it; a `CoreError`'s structured facts go in `details`."""
    import traceback

    stack = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    info: ErrorInfo = {"name": type(exc).__name__, "message": str(exc) or type(exc).__name__, "stack": stack}
    if isinstance(exc, CoreError) and exc.details:
        info["details"] = dict(exc.details)
    return info


class Emitter:
    """Hands every event to every sink, in the order the run's events happen; a sink that raises is
    reported once and never breaks the run.

    Work handed over with `defer` (a recorded SDK request's bookkeeping, which emits its events
    through `send`) is done later, in order: before any event emitted after it (`emit`), when the
    run's state is read (`settle`, `settled`), at `flush`, and otherwise by the drainer thread within
    `DRAIN_INTERVAL` (`drainer.py`). So sinks hear the same events in the same order as if each had
    been emitted when it happened, but a deferred event may reach them from the drainer's thread;
    never two at once.

    Events that happen together reach each sink at once, through its `many(events)` when it has one
    (a `JsonlSink` writes them in one `write(2)`): those a frame opens or closes with (`emit_all`), and
    those settled deferred work emits together with the event that settled it. Nothing is held past
    the call that emitted it: the code being recorded never runs while an event waits in a buffer.
    """

    def __init__(self, sinks: Iterable[Sink]) -> None:
        self.sinks: tuple[Sink, ...] = tuple(sinks)
        # Each sink with the method it takes events emitted together with (None: one at a time).
        self._many: tuple[tuple[Sink, Callable[[list[TraceEvent]], object] | None], ...] = tuple(
            (sink, getattr(sink, "many", None)) for sink in self.sinks
        )
        self._reported: set[int] = set()
        self._pending: deque[Callable[[], object]] = deque()
        self._busy = False  # deferred work is being done (the last may have left `_pending` already)
        self._scheduled = False  # the drainer has been told of the pending work
        # What deferred work being settled has sent, handed to the sinks when it is done (under `_lock`).
        self._held: list[TraceEvent] | None = None
        self._lock = threading.RLock()

    def emit(self, event: TraceEvent) -> None:
        if self._pending or self._busy:
            with self._lock:
                self._settle([event])
            return
        self._to_sinks(event)

    def emit_all(self, events: list[TraceEvent]) -> None:
        """Events that happen together (a frame's opening pair, its closing ones), in their order."""
        if self._pending or self._busy:
            with self._lock:
                self._settle(events)
            return
        self._deliver(events)

    def send(self, event: TraceEvent) -> None:
        """`event` to the sinks now: what deferred work emits with (it runs in order already)."""
        if self._held is not None:
            self._held.append(event)
            return
        self._to_sinks(event)

    def _to_sinks(self, event: TraceEvent) -> None:
        for sink in self.sinks:
            try:
                sink(event)
            except Exception as exc:
                self._report(sink, "failed on an event", exc)

    def _deliver(self, events: list[TraceEvent]) -> None:
        if len(events) < 2:
            if events:
                self._to_sinks(events[0])
            return
        for sink, many in self._many:
            if many is None:  # each event on its own, as `emit` hands it one
                for event in events:
                    try:
                        sink(event)
                    except Exception as exc:
                        self._report(sink, "failed on an event", exc)
                continue
            try:
                many(events)
            except Exception as exc:
                self._report(sink, "failed on events", exc)

    def defer(self, work: Callable[[], object]) -> None:
        """Do `work` later, in order with the run's other events (see the class docstring)."""
        self._pending.append(work)
        if not self._scheduled:
            self._scheduled = True
            DRAINER.due(self)

    def settle(self) -> None:
        """Do the deferred work now."""
        with self._lock:
            self._settle()

    @contextmanager
    def settled(self) -> Iterator[None]:
        """Around a read of what deferred work builds (journals, budgets): done, and none done meanwhile."""
        with self._lock:
            self._settle()
            yield

    def flush(self) -> None:
        """Do the deferred work, then ask sinks that buffer (`flush()`) to write out what they hold;
        called at the end of a run."""
        self.settle()
        for sink in self.sinks:
            flush: Any = getattr(sink, "flush", None)
            if callable(flush):
                try:
                    flush()
                except Exception as exc:
                    self._report(sink, "failed to flush", exc)

    def _settle(self, then: list[TraceEvent] | None = None) -> None:
        """Do the deferred work (under `_lock`), then hand the sinks what it sent and `then` at once."""
        # Told again on the next `defer`: the drainer may have settled this one already, or will find nothing.
        self._scheduled = False
        if self._held is not None:  # an emit from deferred work being settled: after what it sent so far
            self._held.extend(then or ())
            return
        if not self._pending:
            self._deliver(then or [])
            return
        # Busy until the events are delivered: an emit from another thread meanwhile waits for the lock.
        self._busy = True
        held: list[TraceEvent] = []
        self._held = held
        try:
            try:
                while self._pending:
                    work = self._pending.popleft()
                    try:
                        work()
                    except Exception as exc:  # our own bookkeeping failing must not fail the run it records
                        logger.exception("devtool: deferred recording work %r failed (%s)", work, exc)
            finally:
                self._held = None
            held.extend(then or ())
            self._deliver(held)
        finally:
            self._busy = False

    def _report(self, sink: Sink, what: str, exc: Exception) -> None:
        if id(sink) in self._reported:
            return
        self._reported.add(id(sink))
        logger.warning(
            "devtool: trace sink %r %s (%s: %s); the run goes on, further failures of this sink are not reported",
            sink,
            what,
            type(exc).__name__,
            exc,
        )
