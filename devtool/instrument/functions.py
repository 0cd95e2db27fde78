"""Plain functions as agents and tools: `@agent` makes each call a frame, `@tool` a journaled tool call.

    @devtool.agent                    # or @devtool.agent(name="triage")
    async def triage(ticket): ...     # each call: agent:start/generation:start ... their ends, in a frame

    @devtool.tool                     # or @devtool.tool(name="lookup", exclude=("ctx",))
    def lookup_order(order_id: str) -> dict: ...

A tool call's input is its arguments by parameter name (pydantic models as their JSON), hashed as
`prompt()`'s tools are (`{"name", "input"}`); its output is journaled, so a replay returns what it
returned without running it (its side effects skipped). An argument that does not change the result
(a framework's context object) is left out of the input with `exclude`; an input that is still not
JSON is shown described and never journaled (the call always runs), and so is an output that is not
JSON (a tombstone). Sync functions stay sync, async ones stay coroutine functions, with their name,
signature, annotations and docstring, so frameworks that read them (Pydantic AI, the OpenAI Agents
SDK) see the function they were given.

Outside a recorded run they are the plain functions: nothing is recorded. A call's callId is taken
when it starts running: a sync call at once, a coroutine when first scheduled, which for
`asyncio.gather`/`create_task`/`TaskGroup` is the order they were created in, so parallel calls number
the same way in a run and its replay. Work handed to a thread keeps the run when it is handed its
context: `asyncio.to_thread` does; `loop.run_in_executor` and `ThreadPoolExecutor.submit` want
`contextvars.copy_context().run` (the core's one ContextVar travels with it).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Iterable
from contextvars import ContextVar
from typing import Any, TypeVar, overload

from devtool.core.agents import AgentScope
from devtool.core.frame import CURRENT_FRAME
from devtool.core.tools import call_function, call_function_sync

F = TypeVar("F", bound=Callable[..., Any])
# True while a framework's tool call runs (`journaled_tool`): the `@tool` function it calls is part of it.
_IN_FRAMEWORK_TOOL: ContextVar[bool] = ContextVar("devtool_in_framework_tool", default=False)


@overload
def agent(fn: F, /) -> F: ...
@overload
def agent(*, name: str | None = None) -> Callable[[F], F]: ...
def agent(fn: Callable[..., Any] | None = None, /, *, name: str | None = None) -> Any:
    """Each call of the function is an agent frame (its `agentId` the function's name, or `name`)."""

    def decorate(fn: F) -> F:
        agent_id = name or fn.__name__

        def framed(args: tuple[Any, ...], kwargs: dict[str, Any]) -> AgentFrame:
            return agent_frame(agent_id, lambda: _arguments(fn, args, kwargs, ()))

        if inspect.iscoroutinefunction(fn):

            async def run_async(*args: Any, **kwargs: Any) -> Any:
                with framed(args, kwargs) as result:
                    result.append(await fn(*args, **kwargs))
                return result[0]

            return functools.wraps(fn)(run_async)  # type: ignore[return-value]

        def run(*args: Any, **kwargs: Any) -> Any:
            with framed(args, kwargs) as result:
                result.append(fn(*args, **kwargs))
            return result[0]

        return functools.wraps(fn)(run)  # type: ignore[return-value]

    return decorate(fn) if fn is not None else decorate


def agent_frame(
    agent_id: str, props: Callable[[], Any], *, place: tuple[tuple[str, ...], str] | None = None
) -> AgentFrame:
    """An agent frame named `agent_id` around a `with` block, in the current run (none outside one),
    which puts the call's result in the list the block is given; `props()` what the frame shows it was
    given. `place`: the frame is one of several started together (`Frame.ordered_call_id`'s
    `together`, and its own id among them), numbered by its place there rather than by when its thread
    starts."""
    return AgentFrame(agent_id, props, place)


class AgentFrame:
    """`agent_frame`'s block: a class, not a `contextlib.contextmanager` generator, whose machinery
    (a generator, its frame and three calls a block) was a tenth of a framework run's own frame cost."""

    __slots__ = ("_agent_id", "_place", "_props", "_scope", "result")

    def __init__(self, agent_id: str, props: Callable[[], Any], place: tuple[tuple[str, ...], str] | None) -> None:
        self._agent_id, self._props, self._place = agent_id, props, place
        self._scope: AgentScope | None = None
        self.result: list[Any] = []

    def __enter__(self) -> list[Any]:
        parent = CURRENT_FRAME.get(None)
        if parent is None:
            return self.result
        agent_id, place = self._agent_id, self._place
        if place is None:
            call_id = parent.next_call_id("agent", agent_id)
        else:
            call_id = parent.ordered_call_id("agent", agent_id, *place)
        self._scope = AgentScope(parent, call_id, agent_id, self._props(), model=None)
        self._scope.open()
        return self.result

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, traceback: Any) -> None:
        scope, result = self._scope, self.result
        if scope is None:
            return
        if error is not None:
            scope.close(error=error)
        else:
            scope.close(result[0] if result else None)


def journaled_tool(
    name: str, input: Any, run: Callable[[], Any], *, tool_call_id: str | None = None, together: tuple[str, ...] = ()
) -> Awaitable[Any]:
    """A framework's tool call as one journaled call (`call_function`): `run()`, awaited if it gives an
    awaitable, when the journal has no answer, its result as JSON where it can be (a pydantic model
    dumped), so a recording and its replay hand the framework the same value. Inside it, `@tool`
    functions run plain: the framework's call is the one a replay serves. `together`: as
    `call_function`'s (the ids of the calls the model asked for at once, numbered by their order)."""

    async def running() -> Any:
        token = _IN_FRAMEWORK_TOOL.set(True)
        try:
            result = run()
            return to_json(await result if inspect.isawaitable(result) else result)
        finally:
            _IN_FRAMEWORK_TOOL.reset(token)

    return call_function(name, to_json(input), running, tool_call_id=tool_call_id, together=together)


def journaled_tool_sync(
    name: str, input: Any, run: Callable[[], Any], *, tool_call_id: str | None = None, together: tuple[str, ...] = ()
) -> Any:
    """`journaled_tool` for a framework that calls its tool without awaiting, in this thread."""

    def running() -> Any:
        token = _IN_FRAMEWORK_TOOL.set(True)
        try:
            return to_json(run())
        finally:
            _IN_FRAMEWORK_TOOL.reset(token)

    return call_function_sync(name, to_json(input), running, tool_call_id=tool_call_id, together=together)


def _recording_tool() -> bool:
    """Whether a `@tool` call now is a call of its own: in a run, and not inside a framework's tool call."""
    return CURRENT_FRAME.get(None) is not None and not _IN_FRAMEWORK_TOOL.get()


@overload
def tool(fn: F, /) -> F: ...
@overload
def tool(*, name: str | None = None, exclude: Iterable[str] = ()) -> Callable[[F], F]: ...
def tool(fn: Callable[..., Any] | None = None, /, *, name: str | None = None, exclude: Iterable[str] = ()) -> Any:
    """Each call of the function is a recorded, journaled tool call (named as the function, or `name`)."""
    left_out = tuple(exclude)

    def decorate(fn: F) -> F:
        tool_name = name or fn.__name__
        if inspect.iscoroutinefunction(fn):

            async def call_async(*args: Any, **kwargs: Any) -> Any:
                if not _recording_tool():
                    return await fn(*args, **kwargs)
                return await call_function(
                    tool_name, _arguments(fn, args, kwargs, left_out), lambda: fn(*args, **kwargs)
                )

            return functools.wraps(fn)(call_async)  # type: ignore[return-value]

        def call(*args: Any, **kwargs: Any) -> Any:
            if not _recording_tool():
                return fn(*args, **kwargs)
            return call_function_sync(tool_name, _arguments(fn, args, kwargs, left_out), lambda: fn(*args, **kwargs))

        return functools.wraps(fn)(call)  # type: ignore[return-value]

    return decorate(fn) if fn is not None else decorate


def _arguments(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], exclude: tuple[str, ...]) -> Any:
    """The call's arguments by parameter name, as JSON where they can be (pydantic models dumped)."""
    try:
        bound = _signature(fn).bind(*args, **kwargs)
    except TypeError:  # the call itself is wrong: the function will say so when it runs
        return {"args": [to_json(a) for a in args], "kwargs": {k: to_json(v) for k, v in kwargs.items()}}
    return {key: to_json(value) for key, value in bound.arguments.items() if key not in exclude}


@functools.cache
def _signature(fn: Callable[..., Any]) -> inspect.Signature:
    return inspect.signature(fn)


def to_json(value: Any) -> Any:
    """`value` as JSON where a framework value has a JSON form (pydantic models, tuples); else as it is."""
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        try:
            return dump(mode="json")
        except Exception:  # not a pydantic model after all: shown described
            return value
    if isinstance(value, tuple):
        return [to_json(item) for item in value]
    return value
