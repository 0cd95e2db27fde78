"""Pydantic AI recorded whole: each agent run an agent frame, each tool call a journaled call.

`Agent.iter` (which `run`, `run_sync`, `run_stream` and `run_stream_events` all go through) is wrapped:
inside a recorded run it opens the agent's frame before the run starts (so the ContextVars it sets are
the run's, its tool tasks included) and closes it with the run's output, and it runs the agent with
its toolsets, the run's own `toolsets=` among them, each in a `JournaledToolset` (Pydantic AI's public
`WrapperToolset`), put in place by the agent's public `override(tools=[], toolsets=...)` for that run:
`call_tool` receives the validated arguments and the model's `tool_call_id`, so the call is journaled
there and a replay answers it without running the function (an unchanged input after a cut is served).

Why not a capability, Pydantic AI's documented hook for both (`wrap_run`, `wrap_tool_execute`): each
capability of a run costs every hook of every step a copy of the `RunContext`, whether it implements
the hook or not; an empty one is ~4.7% of a one-tool step's instructions. A run that brings
capabilities or a spec of its own, or an agent whose capabilities bring toolsets, would lose those
toolsets to `override(toolsets=)`: there the tool calls are journaled by a capability
(`JournaledTools.wrap_tool_execute`) and the frame is still the wrapper's. Outside a recorded run the
wrapper calls `Agent.iter` as it is.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.toolsets import AbstractToolset, WrapperToolset

from devtool.core.frame import CURRENT_FRAME
from devtool.instrument.functions import agent_frame, journaled_tool

_MARK = "__devtool_recorded__"


@dataclass
class JournaledToolset(WrapperToolset[Any]):
    """The wrapped toolset's tool calls journaled, by their validated arguments and the model's call id."""

    async def call_tool(self, name: str, tool_args: dict[str, Any], ctx: Any, tool: Any) -> Any:
        call = self.wrapped.call_tool
        return await journaled_tool(
            name, tool_args, lambda: call(name, tool_args, ctx, tool), tool_call_id=ctx.tool_call_id
        )


@dataclass
class JournaledTools(AbstractCapability[Any]):
    """The run's tool calls journaled, for the runs whose toolsets `override` would change."""

    async def wrap_tool_execute(self, ctx: Any, *, call: Any, tool_def: Any, args: Any, handler: Any) -> Any:
        return await journaled_tool(tool_def.name, args, lambda: handler(args), tool_call_id=call.tool_call_id)


def instrument() -> bool:
    """Wrap `Agent.iter` to record every agent run made inside a recorded run. False if it was done already."""
    original = Agent.iter
    if getattr(original, _MARK, False):
        return False

    @functools.wraps(original)
    def iter(self: Agent[Any, Any], *args: Any, **kwargs: Any) -> Any:
        if CURRENT_FRAME.get(None) is None:
            return original(self, *args, **kwargs)
        return _recorded(self, original, sys._getframe(1), args, kwargs)

    setattr(iter, _MARK, True)
    Agent.iter = iter  # type: ignore[method-assign]
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
        if kwargs.get("capabilities") or kwargs.get("spec") or self.root_capability.get_toolset() is not None:
            kwargs["capabilities"] = [*(kwargs.get("capabilities") or ()), JournaledTools()]
            tools: contextlib.AbstractContextManager[Any] = contextlib.nullcontext()
        else:
            tools = self.override(
                tools=[], toolsets=_journaled([*self.toolsets, *(kwargs.pop("toolsets", None) or ())])
            )
        with tools:
            async with original(self, *args, **kwargs) as run:
                yield run
        result.append(run.result.output if run.result is not None else None)


def _journaled(toolsets: Sequence[AbstractToolset[Any]]) -> list[AbstractToolset[Any]]:
    """Each toolset wrapped once: a run of the agent inside one of its own tool calls sees them wrapped."""
    return [each if isinstance(each, JournaledToolset) else JournaledToolset(each) for each in toolsets]


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
