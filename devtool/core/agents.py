"""Agents: `create_agent`, and what one agent call does (a child frame, its events, its snapshot).

`await agent(props)` runs `handler(props)` in a child frame of the caller. The callId is taken
when `agent(props)` is called, not when it is awaited, so sub-agents started together (a list
comprehension handed to `asyncio.gather`) are numbered in list order, in the original run and in
its replay alike. On a replay the child restores its memory and journal from the parent's
snapshot frame, `children[callId]`.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any

from devtool.core.events import EVENTS, TraceEvent, error_info, trace_event
from devtool.core.frame import CURRENT_FRAME, Frame
from devtool.core.ids import new_span_id
from devtool.core.jsonvalue import describe
from devtool.core.model import Model
from devtool.core.providers import resolve_model


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
        run = parent.run
        agent_span, generation_span = new_span_id(), new_span_id()
        frame = Frame(
            run=run,
            call_id=call_id,
            agent_id=self.id,
            span_id=generation_span,
            parent=parent,
            model=self.model,
            restored=parent.restored_children.get(call_id) if run.enable_snapshot else None,
        )
        if run.enable_snapshot:
            parent.children[call_id] = frame
        described_props = describe(props)

        def event(kind: str, span: str, parent_span: str, **fields: Any) -> TraceEvent:
            return trace_event(kind, self.id, run.trace_id, span, parent_span, callId=call_id, **fields)

        def finish(outcome: dict[str, Any]) -> None:
            elapsed = (time.perf_counter() - started) * 1000
            memory = frame.memory.to_json()
            run.emitter.emit(
                event(EVENTS.GENERATION_END, generation_span, agent_span, generationId=0, memory=memory,
                      duration=elapsed, **outcome)
            )  # fmt: skip
            run.emitter.emit(
                event(EVENTS.AGENT_END, agent_span, parent.span_id, props=described_props, duration=elapsed, **outcome)
            )

        started = time.perf_counter()
        run.emitter.emit(event(EVENTS.AGENT_START, agent_span, parent.span_id, props=described_props))
        run.emitter.emit(event(EVENTS.GENERATION_START, generation_span, agent_span, generationId=0))
        token = CURRENT_FRAME.set(frame)
        try:
            result = self.handler(props)
            if inspect.isawaitable(result):
                result = await result
        except BaseException as exc:
            frame.status, frame.error = "failed", error_info(exc)
            if run.first_report(exc):
                run.emitter.emit(event(EVENTS.ERROR, new_span_id(), generation_span, error=frame.error))
            finish({"success": False, "error": frame.error})
            raise
        finally:
            CURRENT_FRAME.reset(token)
        frame.status, frame.output = "completed", result
        finish({"success": True, "result": describe(result)})
        return result

    def __repr__(self) -> str:
        return f"Agent({self.id!r})"


def create_agent(id: str, handler: Callable[[Any], Any], *, model: Model | str | None = None) -> Agent:
    """An agent whose `handler(props)` (sync or async) runs in its own frame on every call.

    `model` is a model object or a name (`"openai:gpt-4.1-mini"`, `"anthropic:claude-sonnet-4-5"`),
    resolved once, here; without one its prompts use the calling agent's model, else `DEVTOOL_MODEL`.
    """
    return Agent(id, handler, resolve_model(model))
