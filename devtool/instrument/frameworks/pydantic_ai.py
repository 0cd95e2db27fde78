"""Pydantic AI recorded whole: each agent run an agent frame, each tool call a journaled call.

Pydantic AI's public extension point for both is a capability: `wrap_run` encloses a run (the frame is
opened there, and the ContextVars set before `handler()` are the run's, tool tasks included), and
`wrap_tool_execute` a tool's execution after its arguments are validated (the call is journaled there,
by the validated arguments, so a replay answers it without running the function, and an unchanged
input after a cut is served). An agent takes capabilities when made or per run; to reach every agent
with no change to the user's code, `Agent.iter` (which `run`, `run_sync` and `run_stream` all go
through) is wrapped to add ours to the run's `capabilities` while a recorded run is current: nothing
else of the framework is touched.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.capabilities import AbstractCapability

from devtool.core.frame import CURRENT_FRAME
from devtool.instrument.functions import agent_frame, journaled_tool

_MARK = "__devtool_recorded__"


@dataclass
class Recorded(AbstractCapability[Any]):
    """The run as an agent frame named by the agent, its tool calls journaled."""

    async def wrap_run(self, ctx: Any, *, handler: Any) -> Any:
        agent = ctx.agent
        name = getattr(agent, "name", None) or "agent"
        with agent_frame(name, lambda: {"prompt": ctx.prompt if isinstance(ctx.prompt, str) else None}) as result:
            run = await handler()
            result.append(run.output)
        return run

    async def wrap_tool_execute(self, ctx: Any, *, call: Any, tool_def: Any, args: Any, handler: Any) -> Any:
        return await journaled_tool(tool_def.name, args, lambda: handler(args), tool_call_id=call.tool_call_id)


def instrument() -> bool:
    """Add `Recorded` to every agent run made inside a recorded run. False if it was done already."""
    original = Agent.iter
    if getattr(original, _MARK, False):
        return False

    @functools.wraps(original)
    def iter(self: Agent[Any, Any], *args: Any, **kwargs: Any) -> Any:
        if CURRENT_FRAME.get(None) is not None:
            kwargs["capabilities"] = [*(kwargs.get("capabilities") or ()), Recorded()]
        return original(self, *args, **kwargs)

    setattr(iter, _MARK, True)
    Agent.iter = iter  # type: ignore[method-assign]
    return True
