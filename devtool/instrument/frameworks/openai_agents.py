"""The OpenAI Agents SDK recorded whole: each `Runner` run an agent frame, each agent handed off to a
frame inside the one that handed off, each function tool call a journaled call.

The SDK's public extension points used: a `FunctionTool`'s `on_invoke_tool(ctx, arguments)` (a field
users set themselves) is where a tool runs, so it is wrapped to journal the call by its parsed
arguments (a replay answers without running it; an agent run as a tool, `Agent.as_tool`, runs inside
that call); `RunConfig.call_model_input_filter` is called with the agent about to ask the model, in
the task that then asks it and runs its tools, so the frame of that agent is made current there (a
handoff's agent gets its frame at its first request). `RunHooks` serve neither: the SDK runs them in
tasks of their own (a ContextVar set there is lost) and they cannot answer a tool call; tracing
processors are off whenever tracing is (`set_tracing_disabled`, usual with another provider). So
`Runner.run`, `run_sync` and `run_streamed` (public classmethods) are wrapped: in a recorded run they
open the starting agent's frame, add the filter to the run's config (before the user's own, which
still runs) and wrap, once, the function tools of the agents met.
"""

from __future__ import annotations

import copy
import functools
import json
from typing import Any

import orjson
from agents import Agent, FunctionTool, RunConfig, Runner

from devtool.core.agents import AgentScope
from devtool.core.frame import CURRENT_FRAME, Frame
from devtool.instrument.functions import agent_frame, journaled_tool

_MARK = "__devtool_recorded__"


def instrument() -> bool:
    """Wrap `Runner.run`, `run_sync` and `run_streamed`. False if it was done already."""
    if getattr(Runner.run, _MARK, False):
        return False
    run, run_sync, run_streamed = Runner.run, Runner.run_sync, Runner.run_streamed

    @functools.wraps(run)
    async def recorded_run(starting_agent: Agent[Any], input: Any, **kwargs: Any) -> Any:
        if CURRENT_FRAME.get(None) is None:
            return await run(starting_agent, input, **kwargs)
        with _Framed(starting_agent, input, kwargs) as result:
            outcome = await run(starting_agent, input, **kwargs)
            result.append(outcome.final_output)
        return outcome

    @functools.wraps(run_sync)
    def recorded_run_sync(starting_agent: Agent[Any], input: Any, **kwargs: Any) -> Any:
        if CURRENT_FRAME.get(None) is None:
            return run_sync(starting_agent, input, **kwargs)
        with _Framed(starting_agent, input, kwargs) as result:
            outcome = run_sync(starting_agent, input, **kwargs)
            result.append(outcome.final_output)
        return outcome

    @functools.wraps(run_streamed)
    def recorded_run_streamed(starting_agent: Agent[Any], input: Any, **kwargs: Any) -> Any:
        if CURRENT_FRAME.get(None) is None:
            return run_streamed(starting_agent, input, **kwargs)
        # The run goes on in a task of the SDK's (a copy of this context, its frame current) after this
        # returns: here the caller's frame is current again, and the run's frame ends with its events.
        caller = CURRENT_FRAME.get()
        frame = _Framed(starting_agent, input, kwargs)
        result = frame.__enter__()
        try:
            streamed = run_streamed(starting_agent, input, **kwargs)
        except BaseException as exc:
            frame.__exit__(type(exc), exc, exc.__traceback__)
            raise
        CURRENT_FRAME.set(caller)
        stream_events = streamed.stream_events

        async def events() -> Any:
            try:
                async for event in stream_events():
                    yield event
            except BaseException as exc:
                frame.__exit__(type(exc), exc, exc.__traceback__)
                raise
            result.append(streamed.final_output)
            frame.__exit__(None, None, None)

        streamed.stream_events = events  # type: ignore[method-assign]
        return streamed

    for name, wrapped in (
        ("run", recorded_run),
        ("run_sync", recorded_run_sync),
        ("run_streamed", recorded_run_streamed),
    ):
        setattr(wrapped, _MARK, True)
        setattr(Runner, name, staticmethod(wrapped))
    return True


class _Framed:
    """The run as a frame of its starting agent (`kwargs`, the run's, get the filter that switches
    frames); the frames of the agents handed off to are closed with it. A class, not a
    `contextlib.contextmanager` generator: one less generator and its calls a run."""

    __slots__ = ("_agents", "_frame", "_input", "_kwargs", "_starting")

    def __init__(self, starting_agent: Agent[Any], input: Any, kwargs: dict[str, Any]) -> None:
        self._starting, self._input, self._kwargs = starting_agent, input, kwargs
        text = input if isinstance(input, str) else None
        self._frame = agent_frame(starting_agent.name, lambda: {"input": text})
        self._agents: _Agents | None = None

    def __enter__(self) -> list[Any]:
        result = self._frame.__enter__()
        try:
            self._agents = _Agents(self._starting, CURRENT_FRAME.get())
            kwargs = self._kwargs
            kwargs["run_config"] = _with_filter(kwargs.get("run_config"), self._agents)
        except BaseException as exc:
            self._frame.__exit__(type(exc), exc, exc.__traceback__)
            raise
        return result

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, traceback: Any) -> None:
        result = self._frame.result
        try:
            if self._agents is not None:
                self._agents.close(None if error is not None else (result[0] if result else None), error)
        finally:
            self._frame.__exit__(kind, error, traceback)


def _with_filter(config: RunConfig | None, agents_of_run: _Agents) -> RunConfig:
    """The run's config with the filter that switches frames (before the user's own). A shallow copy
    of the user's, not `dataclasses.replace`: that runs the ~50-field `__init__` and its checks again,
    the largest part of a recorded Agents SDK step's own Python work (BENCHMARKS.md, issue 38)."""
    if config is None:
        return RunConfig(call_model_input_filter=agents_of_run.filter(None))
    copied = copy.copy(config)
    copied.call_model_input_filter = agents_of_run.filter(config.call_model_input_filter)
    return copied


class _Agents:
    """The frames of one run's agents: the starting agent's (opened by the run), and one for each agent
    handed off to, opened at its first model request inside the frame of the agent before it."""

    def __init__(self, starting_agent: Agent[Any], frame: Frame) -> None:
        _prepare(starting_agent)
        self.frames: dict[int, Frame] = {id(starting_agent): frame}
        self.last = frame
        self.opened: list[AgentScope] = []

    def filter(self, user_filter: Any) -> Any:
        def enter(data: Any) -> Any:
            CURRENT_FRAME.set(self.frame_of(data.agent))  # the task's frame from here: its request and tools
            return user_filter(data) if user_filter is not None else data.model_data

        return enter

    def frame_of(self, agent: Agent[Any]) -> Frame:
        frame = self.frames.get(id(agent))
        if frame is None:
            _prepare(agent)
            parent = self.last
            scope = AgentScope(parent, parent.next_call_id("agent", agent.name), agent.name, None, model=None)
            frame = self.frames[id(agent)] = scope.open()
            self.opened.append(scope)
        self.last = frame
        return frame

    def close(self, result: Any, error: BaseException | None) -> None:
        """Close the frames handed off to, the innermost first (the last agent's result is the run's)."""
        for scope in reversed(self.opened):
            scope.close(result, error=error)


def _prepare(agent: Agent[Any]) -> None:
    """Wrap the function tools of `agent`, once each."""
    for tool in agent.tools:
        if isinstance(tool, FunctionTool):
            _wrap_tool(tool)


def _wrap_tool(tool: FunctionTool) -> None:
    invoke = tool.on_invoke_tool
    if getattr(invoke, _MARK, False):
        return

    async def on_invoke_tool(ctx: Any, arguments: str) -> Any:
        if CURRENT_FRAME.get(None) is None:
            return await invoke(ctx, arguments)
        try:
            parsed = orjson.loads(arguments) if arguments else {}
        except orjson.JSONDecodeError:
            try:  # what orjson refuses and Python's JSON reads (NaN, an integer beyond 64 bits)
                parsed = json.loads(arguments)
            except ValueError:  # the SDK tells the model so when the tool runs
                parsed = arguments
        return await journaled_tool(
            tool.name, parsed, lambda: invoke(ctx, arguments), tool_call_id=getattr(ctx, "tool_call_id", None)
        )

    setattr(on_invoke_tool, _MARK, True)
    tool.on_invoke_tool = on_invoke_tool
