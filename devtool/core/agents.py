"""Agents: `create_agent`, and what one agent call does (a child frame, its events, its snapshot).

`await agent(props)` runs `handler(props)` in a child frame of the caller. The callId is taken
when `agent(props)` is called, not when it is awaited, so sub-agents started together (a list
comprehension handed to `asyncio.gather`) are numbered in list order, in the original run and in
its replay alike. On a replay the child restores its memory and journal from the parent's
snapshot frame, `children[callId]`.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Awaitable, Callable
from contextvars import Token
from typing import Any, Final

from devtool.core.events import EVENTS, TraceEvent, event_head
from devtool.core.frame import CURRENT_FRAME, TOOL_SPAN, Frame
from devtool.core.ids import new_span_id
from devtool.core.jsonvalue import JSON, describe
from devtool.core.model import Model
from devtool.core.providers import resolve_model
from devtool.core.scoped import run_in

# The TypeScript library's draft of a generation (what it equipped): nothing here. Shared by every
# `generation:end`, never written.
EMPTY_DRAFT: Final[dict[str, list[JSON]]] = {
    "systemPrompts": [],
    "instructions": [],
    "tools": [],
    "scopeLayers": [],
    "resourceKeys": [],
}


class Agent:
    """A named handler that runs as its own frame. Create with `create_agent`."""

    def __init__(self, agent_id: str, handler: Callable[[Any], Any], model: Model | None) -> None:
        self.id = agent_id
        self.handler = handler
        self.model = model

    def __call__(self, props: Any = None) -> Awaitable[Any]:
        parent = CURRENT_FRAME.get(None)
        if parent is None:
            from devtool.core.run import run_with

            return run_with(lambda: self(props))
        return self._run(parent, parent.next_call_id("agent", self.id), props)

    async def _run(self, parent: Frame, call_id: str, props: Any) -> Any:
        scope = AgentScope(parent, call_id, self.id, props, model=self.model)
        return await run_in(scope, lambda: self.handler(props))

    def __repr__(self) -> str:
        return f"Agent({self.id!r})"


def create_agent(id: str, handler: Callable[[Any], Any], *, model: Model | str | None = None) -> Agent:
    """An agent whose `handler(props)` (sync or async) runs in its own frame on every call.

    `model` is a model object or a name (`"openai:gpt-4.1-mini"`, `"anthropic:claude-sonnet-4-5"`),
    resolved once, here; without one its prompts use the calling agent's model, else `DEVTOOL_MODEL`.
    """
    return Agent(id, handler, resolve_model(model))


class AgentScope:
    """One agent call's frame and events, opened before its code runs and closed after.

    `Agent` opens one around its handler, `devtool.instrument`'s `@agent` around a plain function
    (sync or async). `open()` emits `agent:start` and `generation:start` and makes the frame current;
    `close()` makes it current no longer and emits the ends with the outcome (and an `error` event in
    the frame where an exception first arose). Both in the same context (thread or task).
    """

    def __init__(self, parent: Frame, call_id: str, agent_id: str, props: Any, *, model: Model | None) -> None:
        run = parent.run
        self.parent = parent
        self.call_id = call_id
        self.agent_id = agent_id
        self.agent_span, self.generation_span = new_span_id(), new_span_id()
        self.frame = Frame(
            run=run,
            call_id=call_id,
            agent_id=agent_id,
            span_id=self.generation_span,
            parent=parent,
            model=model,
            restored=parent.restored_children.get(call_id) if run.enable_snapshot else None,
        )
        if run.enable_snapshot:
            parent.children[call_id] = self.frame
        self.props = describe(props)
        # Started inside a tool call of its parent (an agent run as a tool): drawn inside that call.
        tool = TOOL_SPAN.get()
        self.parent_span = tool[1] if tool is not None and tool[0] is parent else parent.span_id
        self._started = 0.0
        self._token: Token[Frame] | None = None

    # The TypeScript library's agent fields mean here: no scope layers, resources or equipped prompts;
    # never reborn; one generation. Each event is `events.event_head` with its own keys set in wire order,
    # not merged from shared dicts and the outcome (on every framework step's path; BENCHMARKS.md, issue 38).

    def open(self) -> Frame:
        self._started = time.perf_counter()
        agent_id, trace_id, call_id, props = self.agent_id, self.frame.run.trace_id, self.call_id, self.props
        start = event_head(EVENTS.AGENT_START, agent_id, trace_id, self.agent_span, self.parent_span)
        start["callId"], start["props"] = call_id, props
        start["scopeLayers"], start["resourceKeys"], start["maxReborns"] = [], [], 0
        generation = event_head(EVENTS.GENERATION_START, agent_id, trace_id, self.generation_span, self.agent_span)
        generation["callId"], generation["generationId"], generation["props"] = call_id, 0, props
        self.frame.run.emitter.emit_all([start, generation])
        self._token = CURRENT_FRAME.set(self.frame)
        return self.frame

    def close(self, result: Any = None, *, error: BaseException | None = None) -> None:
        if self._token is not None:
            # A frame closed in another context than it was opened in (a framework's handoff, opened in
            # its run loop's task and closed when the run returns) leaves that context alone.
            with contextlib.suppress(ValueError):
                CURRENT_FRAME.reset(self._token)
            self._token = None
        frame, run = self.frame, self.frame.run
        outcome = frame.settle(result, error)
        agent_id, trace_id, call_id, props = self.agent_id, run.trace_id, self.call_id, self.props
        agent_span, generation_span = self.agent_span, self.generation_span
        ends: list[TraceEvent] = []
        if error is not None and run.first_report(error):
            failure = event_head(EVENTS.ERROR, agent_id, trace_id, new_span_id(), generation_span)
            failure["callId"], failure["error"] = call_id, outcome["error"]
            ends.append(failure)
        elapsed = (time.perf_counter() - self._started) * 1000
        success = outcome["success"]
        generation = event_head(EVENTS.GENERATION_END, agent_id, trace_id, generation_span, agent_span)
        generation["callId"], generation["generationId"], generation["props"] = call_id, 0, props
        generation["memory"], generation["endReason"] = frame.memory.to_json(), "return" if success else "error"
        generation["draft"], generation["duration"], generation["success"] = EMPTY_DRAFT, elapsed, success
        end = event_head(EVENTS.AGENT_END, agent_id, trace_id, agent_span, self.parent_span)
        end["callId"], end["props"], end["duration"], end["generationCount"] = call_id, props, elapsed, 1
        end["scopeLayers"], end["resourceKeys"], end["maxReborns"], end["success"] = [], [], 0, success
        if success:
            generation["result"] = end["result"] = outcome["result"]
        else:
            generation["error"] = end["error"] = outcome["error"]
        ends.append(generation)
        ends.append(end)
        run.emitter.emit_all(ends)  # with the deferred work this settles: one write(2) to a JSONL file
