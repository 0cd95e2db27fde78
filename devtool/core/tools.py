"""Tools: `create_tool`, the onion of middleware around a call, and batches of calls.

Every call, direct (`await search(query="x")`) or asked for by the model, goes the same way: the
input is checked against the tool's JSON schema, hashed (`{"name", "input"}`), passed through the
tool's middleware (outermost first) and reaches the journal cache, the innermost layer: on a replay
the recorded output comes back from there, so user middleware still sees a cache hit. A batch is
one `tools:execute` span with a result per call.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from devtool.core.errors import CoreError, ToolError
from devtool.core.events import EVENTS, ErrorInfo, ToolResult, error_info, event_head
from devtool.core.frame import TOOL_SPAN, Frame, current_frame
from devtool.core.ids import new_span_id
from devtool.core.jsonvalue import JSON, NotJSONError, content_hash_of_json, describe, json_copy
from devtool.core.model import ToolDefinition
from devtool.core.schema import InvalidSchemaError, SchemaViolation, validator
from devtool.core.snapshot import JournalRecord


@dataclass(frozen=True)
class ToolCall:
    """One call as middleware sees it."""

    tool: Tool
    input: dict[str, Any]
    call_id: str
    content_hash: str | None
    tool_call_id: str | None


Next = Callable[[ToolCall], Awaitable[Any]]
Middleware = Callable[[ToolCall, Next], Awaitable[Any]]


class Tool:
    """A named, schema-checked function an agent or a model can call. Create with `create_tool`."""

    def __init__(
        self,
        name: str,
        handler: Callable[..., Any],
        *,
        description: str,
        parameters: dict[str, JSON] | None,
        middleware: Sequence[Middleware],
    ) -> None:
        self.name = name
        self.handler = handler
        self.description = description
        self.parameters: dict[str, JSON] = parameters or {"type": "object"}
        try:
            self._check = validator(self.parameters) if parameters else None
        except InvalidSchemaError as exc:
            raise ToolError(f"tool {name!r}: parameters are not a valid JSON schema: {exc}") from None
        self.middleware = tuple(middleware)

    def check_input(self, call_input: Any) -> dict[str, Any]:
        """`call_input` if it is an object matching the parameters, else `ToolError` saying where not."""
        if not isinstance(call_input, dict):
            raise ToolError(f"tool {self.name!r}: input must be an object, got {type(call_input).__name__}")
        if self._check is not None:
            try:
                self._check(call_input)
            except SchemaViolation as exc:
                raise ToolError(f"tool {self.name!r}: input does not match its parameters: {exc}") from None
        return call_input

    def definition(self) -> ToolDefinition:
        return {"name": self.name, "description": self.description, "parameters": self.parameters}

    def __call__(self, **args: Any) -> Awaitable[Any]:
        # The callId is taken now, not when awaited, so calls started together number in call order.
        frame = current_frame(f"tool {self.name!r}")
        planned = PlannedCall(self, args, frame.next_call_id("tool", self.name), None)
        return _call_directly(frame, planned)

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"


def create_tool(
    name: str,
    handler: Callable[..., Any],
    *,
    description: str = "",
    parameters: dict[str, JSON] | None = None,
    middleware: Sequence[Middleware] = (),
) -> Tool:
    """A tool whose `handler(**input)` (sync or async) runs when the call is not served from a snapshot."""
    return Tool(name, handler, description=description, parameters=parameters, middleware=middleware)


@dataclass(frozen=True)
class PlannedCall:
    """A call about to run: the tool (None when the model named one that does not exist)."""

    tool: Tool | None
    input: Any
    call_id: str
    tool_call_id: str | None
    name: str = ""


@dataclass(frozen=True)
class Outcome:
    """What one call gave: its event record, its output, or the exception it raised."""

    result: ToolResult
    output: Any
    exception: BaseException | None


async def run_batch(frame: Frame, calls: Sequence[PlannedCall], parent_span: str) -> list[Outcome]:
    """Run `calls` concurrently as one `tools:execute` span under `parent_span`."""
    batch = _Batch(frame, calls, parent_span)
    token = TOOL_SPAN.set((frame, batch.span))
    try:
        if len(calls) == 1:
            outcomes = [await _execute(frame, calls[0])]
        else:
            outcomes = list(await asyncio.gather(*(_execute(frame, call) for call in calls)))
    finally:
        TOOL_SPAN.reset(token)
    batch.end(outcomes)
    return outcomes


def call_function(
    name: str, input: Any, run: Callable[[], Any], *, tool_call_id: str | None = None, together: tuple[str, ...] = ()
) -> Awaitable[Any]:
    """`run()` (whose result, if awaitable, is awaited) as one recorded, journaled call of a tool `name`.

    For code that is not a `Tool` (`devtool.instrument`'s `@tool` functions and the frameworks' tools):
    `input` is what the call is hashed and shown by (the function's arguments), `run` what it does when
    the journal has no answer, `tool_call_id` the model's id for the call if a model asked for it. The
    callId is taken now, as a `Tool`'s is; when the call is one of `together` (the tool_call_ids of the
    calls the model asked for at once, in its order, that a framework may start on threads in any
    order), it is the one at its place among them (`Frame.ordered_call_id`).
    """
    frame = current_frame(f"tool {name!r}")
    return _call_directly(frame, _planned_function(frame, name, input, run, tool_call_id, together))


def call_function_sync(
    name: str, input: Any, run: Callable[[], Any], *, tool_call_id: str | None = None, together: tuple[str, ...] = ()
) -> Any:
    """`call_function` for code that does not await: the same span, journal and events, in this thread."""
    frame = current_frame(f"tool {name!r}")
    planned = _planned_function(frame, name, input, run, tool_call_id, together)
    batch = _Batch(frame, [planned], frame.span_id)
    step = _Step(frame, planned)
    token = TOOL_SPAN.set((frame, batch.span))
    try:
        call = step.begin()
        entry = step.cached(call)
        if entry is not None:
            outcome = step.succeeded(json_copy(entry["output"]), served_from_journal=True)
        else:
            outcome = step.succeeded(call.tool.handler(**call.input), served_from_journal=False)
    except Exception as exc:
        outcome = step.failed(exc)
    finally:
        TOOL_SPAN.reset(token)
    batch.end([outcome])
    if outcome.exception is not None:
        raise outcome.exception
    return outcome.output


def _planned_function(
    frame: Frame, name: str, input: Any, run: Callable[[], Any], tool_call_id: str | None, together: tuple[str, ...]
) -> PlannedCall:
    tool = Tool(name, lambda **_: run(), description="", parameters=None, middleware=())
    if tool_call_id is not None and tool_call_id in together:
        call_id = frame.ordered_call_id("tool", name, together, tool_call_id)
    else:
        call_id = frame.next_call_id("tool", name)
    return PlannedCall(tool, input, call_id, tool_call_id)


class _Batch:
    """One `tools:execute` span: its start when made, its end with the calls' results. Each event is
    `events.event_head` with its own keys set in wire order: on every tool call's path."""

    def __init__(self, frame: Frame, calls: Sequence[PlannedCall], parent_span: str) -> None:
        self.frame = frame
        self.parent_span = parent_span
        self.span, self.started = new_span_id(), time.perf_counter()
        self.call_id = calls[0].call_id if len(calls) == 1 else frame.call_id
        self.names = [_name(call) for call in calls]
        start = event_head(EVENTS.TOOLS_EXECUTE_START, frame.agent_id, frame.run.trace_id, self.span, parent_span)
        start["callId"], start["toolCallsCount"], start["toolNames"] = self.call_id, len(calls), self.names
        frame.emit(start)

    def end(self, outcomes: list[Outcome]) -> None:
        frame = self.frame
        failures = sum(1 for outcome in outcomes if not outcome.result["success"])
        event = event_head(EVENTS.TOOLS_EXECUTE_END, frame.agent_id, frame.run.trace_id, self.span, self.parent_span)
        event["callId"], event["toolCallsCount"], event["toolNames"] = self.call_id, len(self.names), self.names
        event["toolResults"] = [outcome.result for outcome in outcomes]
        event["successCount"], event["failureCount"] = len(outcomes) - failures, failures
        event["duration"] = (time.perf_counter() - self.started) * 1000
        event["success"] = failures == 0
        # A batch is served from the journal when all its calls were: the timeline marks it cached.
        event["cache"] = all(outcome.result.get("cache") for outcome in outcomes)
        frame.emit(event)


async def _call_directly(frame: Frame, call: PlannedCall) -> Any:
    (outcome,) = await run_batch(frame, [call], frame.span_id)
    if outcome.exception is not None:
        raise outcome.exception
    return outcome.output


async def _execute(frame: Frame, planned: PlannedCall) -> Outcome:
    step = _Step(frame, planned)
    try:
        call = step.begin()
        served_from_journal = False

        async def journal_layer(call: ToolCall) -> Any:
            nonlocal served_from_journal
            entry = step.cached(call)
            if entry is not None:
                served_from_journal = True
                return json_copy(entry["output"])
            output = call.tool.handler(**call.input)
            return await output if inspect.isawaitable(output) else output

        output = await _onion(call.tool.middleware, journal_layer)(call)
    except Exception as exc:
        return step.failed(exc)
    return step.succeeded(output, served_from_journal=served_from_journal)


class _Step:
    """One call's record while it runs: its input as the event shows it, its hash, its outcome."""

    def __init__(self, frame: Frame, planned: PlannedCall) -> None:
        self.frame = frame
        self.planned = planned
        self.started = time.perf_counter()
        # One JSON copy of the input serves the event and the hash; an input that is not JSON is described
        # in the event and never journaled (the call always runs).
        try:
            self.input: JSON = json_copy(planned.input)
            self.hashable = True
        except NotJSONError:
            self.input, self.hashable = describe(planned.input), False
        self.result: ToolResult = {
            # The TypeScript library's meaning: the model's id for the call (ours when no model asked).
            "callId": planned.tool_call_id or planned.call_id,
            "callPath": planned.call_id,
            "toolName": _name(planned),
            "input": self.input,
            "success": False,
            "cache": False,
            "contentHash": None,
        }

    def begin(self) -> ToolCall:
        """The call as middleware sees it; `ToolError` when there is no such tool or its input is wrong."""
        tool, call_input = _checked(self.planned)
        digest = content_hash_of_json({"name": tool.name, "input": self.input}) if self.hashable else None
        self.result["contentHash"] = digest
        return ToolCall(tool, call_input, self.planned.call_id, digest, self.planned.tool_call_id)

    def cached(self, call: ToolCall) -> JournalRecord | None:
        """The call's recorded output, from the snapshot being replayed (the run's observer hears of it)."""
        request = {"name": call.tool.name, "input": self.input}
        return self.frame.cached("tool", call.content_hash, call_id=call.call_id, request=request)

    def succeeded(self, output: Any, *, served_from_journal: bool) -> Outcome:
        result = self.result
        result["cache"] = served_from_journal
        if not served_from_journal and not self.frame.record("tool", result["contentHash"], output):
            result["tombstone"] = True
        result["output"] = describe(output)
        result["success"] = True
        result["duration"] = (time.perf_counter() - self.started) * 1000
        return Outcome(result, output, None)

    def failed(self, exc: Exception) -> Outcome:
        self.result["error"] = _error(exc)
        self.result["duration"] = (time.perf_counter() - self.started) * 1000
        return Outcome(self.result, None, exc)


def _checked(planned: PlannedCall) -> tuple[Tool, dict[str, Any]]:
    if planned.tool is None:
        raise ToolError(f"there is no tool named {planned.name!r}")
    return planned.tool, planned.tool.check_input(planned.input)


def _onion(middleware: Sequence[Middleware], innermost: Next) -> Next:
    handler = innermost
    for layer in reversed(middleware):
        handler = _wrap(layer, handler)
    return handler


def _wrap(layer: Middleware, inner: Next) -> Next:
    async def call(tool_call: ToolCall) -> Any:
        return await layer(tool_call, inner)

    return call


def _name(call: PlannedCall) -> str:
    return call.tool.name if call.tool is not None else call.name


def _error(exc: BaseException) -> ErrorInfo:
    # Refusals of our own need no stack; a handler's failure keeps it.
    if isinstance(exc, CoreError):
        return {"name": type(exc).__name__, "message": str(exc)}
    return error_info(exc)
