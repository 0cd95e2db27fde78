"""Pydantic AI recorded whole: each agent run an agent frame, each tool call a journaled call.

`Agent.iter` (which `run`, `run_sync`, `run_stream` and `run_stream_events` all go through) is wrapped:
inside a recorded run it opens the agent's frame before the run starts (so the ContextVars it sets are
the run's, its tool tasks included) and closes it with the run's output. Its tools are journaled where
Pydantic AI calls a function tool, `FunctionToolset.call_tool` (the toolset of the agent's own tools,
of a run's `toolsets=` and of the `Toolset` capability), wrapped too: it is given the validated
arguments and the model's `tool_call_id`, so the call is journaled there and a replay answers it
without running the function (an unchanged input after a cut is served). It journals only inside a
run that this wrapper recorded so (`_JOURNALED`, a ContextVar the run's tool tasks inherit).

Why neither a capability, Pydantic AI's documented hook for both (`wrap_run`, `wrap_tool_execute`), nor
a `WrapperToolset` put in place by the agent's `override`: each capability of a run costs every hook of
every step a copy of the `RunContext`, whether it implements the hook or not (an empty one is ~4.7% of a
one-tool step's instructions); and `override(toolsets=)` leaves the agent's function toolset beside the
wrapper, and a run of two toolsets gathers them in an anyio task group at each step (16 tasks a step
against 2: more than the capability saved). A run whose tools are not all function tools (an MCP
server, a toolset made per run by a function), or that brings capabilities or a spec of its own (their
toolsets unseen here), has its tool calls journaled by a capability instead (`JournaledTools`), and the
frame is still the wrapper's. Outside a recorded run both wrappers call Pydantic AI's as they are.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import AsyncIterator
from contextvars import ContextVar
from dataclasses import dataclass
from types import FrameType
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.toolsets import AbstractToolset, FunctionToolset

from devtool.core.frame import CURRENT_FRAME
from devtool.instrument.functions import agent_frame, journaled_tool

_MARK = "__devtool_recorded__"
# True inside a recorded agent run whose tools are all function tools: `FunctionToolset.call_tool` journals.
_JOURNALED: ContextVar[bool] = ContextVar("devtool_pydantic_ai_journaled", default=False)


@dataclass
class JournaledTools(AbstractCapability[Any]):
    """The run's tool calls journaled, for the runs whose tools are not all function tools."""

    async def wrap_tool_execute(self, ctx: Any, *, call: Any, tool_def: Any, args: Any, handler: Any) -> Any:
        return await journaled_tool(tool_def.name, args, lambda: handler(args), tool_call_id=call.tool_call_id)


def instrument() -> bool:
    """Wrap `Agent.iter` and `FunctionToolset.call_tool` to record every agent run made inside a recorded
    run. False if it was done already."""
    original = Agent.iter
    if getattr(original, _MARK, False):
        return False
    call_tool = FunctionToolset.call_tool

    @functools.wraps(original)
    def iter(self: Agent[Any, Any], *args: Any, **kwargs: Any) -> Any:
        if CURRENT_FRAME.get(None) is None:
            return original(self, *args, **kwargs)
        return _recorded(self, original, sys._getframe(1), args, kwargs)

    @functools.wraps(call_tool)
    async def journaled(self: FunctionToolset[Any], name: str, tool_args: dict[str, Any], ctx: Any, tool: Any) -> Any:
        if not _JOURNALED.get():
            return await call_tool(self, name, tool_args, ctx, tool)
        token = _JOURNALED.set(False)  # what the tool itself calls is not this call
        try:
            run = functools.partial(call_tool, self, name, tool_args, ctx, tool)
            return await journaled_tool(name, tool_args, run, tool_call_id=ctx.tool_call_id)
        finally:
            _JOURNALED.reset(token)

    setattr(iter, _MARK, True)
    Agent.iter = iter  # type: ignore[method-assign]
    FunctionToolset.call_tool = journaled  # type: ignore[method-assign]
    return True


# The first parameter is `self`, the agent: Pydantic AI's name inference passes over frames that hold
# the agent as `self` (and contextlib's), so an unnamed agent is named from its caller's variables still.
@contextlib.asynccontextmanager
async def _recorded(
    self: Agent[Any, Any], original: Any, caller: FrameType, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> AsyncIterator[Any]:
    """The run in an agent frame, its tool calls journaled."""
    prompt = args[0] if args else kwargs.get("user_prompt")
    name = self.name or (kwargs.get("infer_name", True) and _inferred_name(self, caller)) or "agent"
    with agent_frame(name, lambda: {"prompt": prompt if isinstance(prompt, str) else None}) as result:
        plain = (
            not kwargs.get("capabilities")
            and not kwargs.get("spec")
            and _function_tools_only([*self.toolsets, *(kwargs.get("toolsets") or ())])
        )
        if not plain:
            kwargs["capabilities"] = [*(kwargs.get("capabilities") or ()), JournaledTools()]
        token = _JOURNALED.set(plain)
        try:
            async with original(self, *args, **kwargs) as run:
                yield run
        finally:
            _JOURNALED.reset(token)
        result.append(run.result.output if run.result is not None else None)


def _function_tools_only(toolsets: list[AbstractToolset[Any]]) -> bool:
    """Whether every tool of these toolsets is called through a `FunctionToolset` (their leaves)."""
    leaves: list[AbstractToolset[Any]] = []
    for toolset in toolsets:
        toolset.apply(leaves.append)
    return all(isinstance(leaf, FunctionToolset) for leaf in leaves)


def _inferred_name(agent: Agent[Any, Any], caller: FrameType | None) -> str | None:
    """The name Pydantic AI gives an unnamed agent: the variable that holds it where its run was called
    (frames holding it as `self`, a subclass's `run`, passed over), which it sets only once the run starts."""
    while caller is not None and caller.f_locals.get("self") is agent:
        caller = caller.f_back
    if caller is None:
        return None
    for space in (caller.f_locals, caller.f_globals):
        for name, value in space.items():
            if value is agent:
                return name
    return None
