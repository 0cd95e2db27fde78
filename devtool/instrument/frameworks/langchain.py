"""LangChain and LangGraph recorded whole: each tool call a journaled call, each graph run and each node
run an agent frame.

LangChain's callbacks only watch (a handler cannot answer a tool call, and LangGraph runs them where a
ContextVar they set is lost), so they serve neither. The public extension points that can: a tool is a
`BaseTool`, and every way of calling one (`invoke`, LangGraph's `ToolNode`, an agent executor) ends in
its public `run`/`arun`; a graph is a `Pregel`, run by its public `invoke`/`ainvoke` (a subgraph too, as
a node) and `stream`/`astream` (which `invoke` runs, and which a caller may run directly, in any
`stream_mode`). Both are wrapped on their classes (LangGraph has no public hook around a run that
could open a frame its nodes run in). A tool call is journaled by its arguments (the ones its
`tool_call_schema` shows the model: arguments LangGraph injects, its state or runtime, are left out)
and its content (with its artifact and status when it has them: on a replay the `ToolMessage` is made
again with the call's id; a call that ran returns the tool's own), so a replay answers it without
running the tool. A graph run is a frame named by the
graph's `name` (`create_agent(name=...)`), whose output is its last message's text. A node has no
public hook: a node made of functions (LangGraph's `RunnableCallable`, which calls its `func`/`afunc`
in the node's own context) has them wrapped, once a graph, at its first recorded run, so each run of
the node is a frame named by the node (`model`, `tools`, ...). A graph streamed directly is a frame
too, whose output is the last message's text of its last "values" or "updates" chunk.
"""

from __future__ import annotations

import functools
import importlib.util
from contextvars import ContextVar
from typing import Any
from weakref import WeakKeyDictionary

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.tools import BaseTool

from devtool.core.frame import CURRENT_FRAME, Frame
from devtool.instrument.functions import agent_frame, journaled_tool, journaled_tool_sync

_MARK = "__devtool_recorded__"
_MESSAGE = "langchainToolMessage"  # a journaled output that is a ToolMessage's parts
# The running node's input, whose tool calls (`_given`, in the model's order) number its tool calls: a
# sync `ToolNode` runs them on threads (which copy this), each numbered by its place among those of its tool.
_INPUT: ContextVar[Any] = ContextVar("devtool_langgraph_input", default=None)
# Per graph frame, each tool call id its nodes' models asked for -> the ids of that answer, in order: a
# node run sent one call (`Send`, as create_agent's `tools`) is numbered by its place in the answer,
# since sync LangGraph starts the runs on threads in any order.
_ASKED: WeakKeyDictionary[Frame, dict[str, tuple[str, ...]]] = WeakKeyDictionary()
# The graph whose `invoke`/`ainvoke` is running its own `stream`/`astream` (framed once, by `invoke`).
_INVOKING: ContextVar[Any] = ContextVar("devtool_langgraph_invoking", default=None)


def instrument() -> bool:
    """Wrap `BaseTool.run`/`arun`, and `Pregel.invoke`/`ainvoke` when LangGraph is installed. False if
    it was done already."""
    if getattr(BaseTool.run, _MARK, False):
        return False
    _wrap_tools()
    if importlib.util.find_spec("langgraph") is not None:
        _wrap_graphs()
    return True


def _wrap_tools() -> None:
    run, arun = BaseTool.run, BaseTool.arun

    @functools.wraps(run)
    def recorded_run(
        self: BaseTool, tool_input: Any, *args: Any, tool_call_id: str | None = None, **kwargs: Any
    ) -> Any:
        if CURRENT_FRAME.get(None) is None:
            return run(self, tool_input, *args, tool_call_id=tool_call_id, **kwargs)
        live: list[Any] = []

        def running() -> Any:
            live.append(run(self, tool_input, *args, tool_call_id=tool_call_id, **kwargs))
            return _parts(live[0])

        output = journaled_tool_sync(
            self.name, _arguments(self, tool_input), running, tool_call_id=tool_call_id, together=_together(self.name)
        )
        return live[0] if live else _message(self, output, tool_call_id)

    @functools.wraps(arun)
    async def recorded_arun(
        self: BaseTool, tool_input: Any, *args: Any, tool_call_id: str | None = None, **kwargs: Any
    ) -> Any:
        if CURRENT_FRAME.get(None) is None:
            return await arun(self, tool_input, *args, tool_call_id=tool_call_id, **kwargs)

        live: list[Any] = []

        async def running() -> Any:
            live.append(await arun(self, tool_input, *args, tool_call_id=tool_call_id, **kwargs))
            return _parts(live[0])

        output = await journaled_tool(
            self.name, _arguments(self, tool_input), running, tool_call_id=tool_call_id, together=_together(self.name)
        )
        return live[0] if live else _message(self, output, tool_call_id)

    for name, wrapped in (("run", recorded_run), ("arun", recorded_arun)):
        setattr(wrapped, _MARK, True)
        setattr(BaseTool, name, wrapped)


def _wrap_graphs() -> None:
    from langgraph.pregel import Pregel

    invoke, ainvoke, stream, astream = Pregel.invoke, Pregel.ainvoke, Pregel.stream, Pregel.astream

    @functools.wraps(invoke)
    def recorded_invoke(self: Pregel[Any, Any, Any, Any], input: Any, *args: Any, **kwargs: Any) -> Any:
        _frame_nodes(self)
        with agent_frame(self.name or "graph", lambda: None) as result:
            token = _INVOKING.set(self)
            try:
                output = invoke(self, input, *args, **kwargs)
            finally:
                _INVOKING.reset(token)
            result.append(_answer(output))
        return output

    @functools.wraps(ainvoke)
    async def recorded_ainvoke(self: Pregel[Any, Any, Any, Any], input: Any, *args: Any, **kwargs: Any) -> Any:
        _frame_nodes(self)
        with agent_frame(self.name or "graph", lambda: None) as result:
            token = _INVOKING.set(self)
            try:
                output = await ainvoke(self, input, *args, **kwargs)
            finally:
                _INVOKING.reset(token)
            result.append(_answer(output))
        return output

    @functools.wraps(stream)
    def recorded_stream(self: Pregel[Any, Any, Any, Any], input: Any, *args: Any, **kwargs: Any) -> Any:
        if _INVOKING.get() is self:  # `invoke`'s own stream: its frame is open already
            _INVOKING.set(None)
            yield from stream(self, input, *args, **kwargs)
            return
        _frame_nodes(self)
        with agent_frame(self.name or "graph", lambda: None) as result:
            last: list[Any] = [None]
            try:
                for chunk in stream(self, input, *args, **kwargs):
                    _last_answer(chunk, last)
                    yield chunk
            except GeneratorExit:  # the caller stopped reading: the graph ran as far as it read
                pass
            result.append(last[0])

    @functools.wraps(astream)
    async def recorded_astream(self: Pregel[Any, Any, Any, Any], input: Any, *args: Any, **kwargs: Any) -> Any:
        if _INVOKING.get() is self:
            _INVOKING.set(None)
            async for chunk in astream(self, input, *args, **kwargs):
                yield chunk
            return
        _frame_nodes(self)
        with agent_frame(self.name or "graph", lambda: None) as result:
            last: list[Any] = [None]
            try:
                async for chunk in astream(self, input, *args, **kwargs):
                    _last_answer(chunk, last)
                    yield chunk
            except GeneratorExit:
                pass
            result.append(last[0])

    wrappers = {"invoke": recorded_invoke, "ainvoke": recorded_ainvoke, "stream": recorded_stream}
    wrappers["astream"] = recorded_astream
    for name, wrapped in wrappers.items():
        setattr(wrapped, _MARK, True)
        setattr(Pregel, name, wrapped)


def _last_answer(chunk: Any, last: list[Any]) -> None:
    """Keep in `last` the graph's answer so far from a streamed chunk: the last message text of a
    "values" chunk (the state) or an "updates" one (`{node: its update}`), as the chunk itself (one
    mode), `(mode, value)` (several), `{"type", "data"}` (the v2 format); the graph's own, not a
    subgraph's (`subgraphs=True` chunks name it)."""
    mode, value = None, chunk
    if isinstance(chunk, tuple) and len(chunk) in (2, 3):
        if len(chunk) == 3 and chunk[0]:
            return
        mode, value = chunk[-2], chunk[-1]
    elif isinstance(chunk, dict) and "type" in chunk and "data" in chunk:
        if chunk.get("ns"):
            return
        mode, value = chunk["type"], chunk["data"]
    if not (mode is None or (isinstance(mode, str) and mode in ("values", "updates"))):
        return
    answer = _answer(value)
    if answer is None and isinstance(value, dict):  # an update: the last node's, with messages
        answer = next((a for a in map(_answer, reversed(list(value.values()))) if a is not None), None)
    if answer is not None:
        last[0] = answer


def _frame_nodes(graph: Any) -> None:
    """Make each call of each of the graph's nodes a frame named by the node, once a graph. LangGraph
    has no public hook around a node's run: a node made of a function (its `RunnableCallable`, with the
    `func`/`afunc` it calls in the node's own context) has them wrapped; a subgraph is a frame already."""
    if CURRENT_FRAME.get(None) is None or getattr(graph, _MARK, False):
        return
    setattr(graph, _MARK, True)
    for name, node in graph.nodes.items():
        bound: Any = getattr(node, "bound", None)
        if name.startswith("__") or getattr(bound, _MARK, False):
            continue
        func, afunc = getattr(bound, "func", None), getattr(bound, "afunc", None)
        if not callable(func) and not callable(afunc):
            continue
        if callable(func):
            bound.func = _framed(name, func)
        if callable(afunc):
            bound.afunc = _framed_async(name, afunc)
        setattr(bound, _MARK, True)


def _framed(name: str, func: Any) -> Any:
    @functools.wraps(func)
    def node(*args: Any, **kwargs: Any) -> Any:
        if CURRENT_FRAME.get(None) is None:  # the graph runs outside a recorded run
            return func(*args, **kwargs)
        input = args[0] if args else None
        with agent_frame(name, _nothing, place=_place(input)) as result:
            token = _INPUT.set(input)
            try:
                output = func(*args, **kwargs)
            finally:
                _INPUT.reset(token)
            result.append(_answer(output))
        _remember(output)
        return output

    return node


def _framed_async(name: str, afunc: Any) -> Any:
    @functools.wraps(afunc)
    async def node(*args: Any, **kwargs: Any) -> Any:
        if CURRENT_FRAME.get(None) is None:
            return await afunc(*args, **kwargs)
        input = args[0] if args else None
        with agent_frame(name, _nothing, place=_place(input)) as result:
            token = _INPUT.set(input)
            try:
                output = await afunc(*args, **kwargs)
            finally:
                _INPUT.reset(token)
            result.append(_answer(output))
        _remember(output)
        return output

    return node


def _nothing() -> None:
    """What a node frame shows it was given: nothing (its input is the graph's state)."""


def _sent(input: Any) -> tuple[tuple[str, str], ...] | None:
    """The tool calls a node was sent alone (a list of them or a `ToolCallWithContext`, as `Send` gives
    a `ToolNode`), as (id, name); None when it was given a state."""
    if isinstance(input, dict):
        return _calls([input.get("tool_call")]) if input.get("__type") == "tool_call_with_context" else None
    if isinstance(input, list) and input and all(isinstance(c, dict) and c.get("type") == "tool_call" for c in input):
        return _calls(input)
    return None


def _given(input: Any) -> tuple[tuple[str, str], ...]:
    """The tool calls a node's input holds, as (id, name) in the model's order: those it was sent, or
    those of its state's last AI message (as `ToolNode` reads them)."""
    sent = _sent(input)
    if sent is not None:
        return sent
    messages = input.get("messages") if isinstance(input, dict) else getattr(input, "messages", None)
    if isinstance(messages, list):
        for message in reversed(messages):
            if isinstance(message, AIMessage):
                return _calls(message.tool_calls)
    return ()


def _calls(calls: Any) -> tuple[tuple[str, str], ...]:
    return tuple((c["id"], c["name"]) for c in calls if isinstance(c, dict) and c.get("id") and c.get("name"))


def _place(input: Any) -> tuple[tuple[str, ...], str] | None:
    """Where a node run sent one tool call stands among the calls of the answer that asked for it; None
    when it was not sent one, or the answer asked for that one alone (numbered as it starts, the same)."""
    calls = _sent(input)
    graph = CURRENT_FRAME.get(None)
    if calls is None or len(calls) != 1 or graph is None:
        return None
    asked = _ASKED.get(graph, {}).get(calls[0][0])
    return (asked, calls[0][0]) if asked else None


def _together(tool: str) -> tuple[str, ...]:
    """The ids of the calls of this tool the running node was given, in the model's order; none when it
    was given one (a lone call is numbered as it starts, the same). Read at the tool call, not for every
    node: most nodes call no tool."""
    together = tuple(call_id for call_id, name in _given(_INPUT.get()) if name == tool)
    return together if len(together) > 1 else ()


def _remember(output: Any) -> None:
    """Note, in the graph's frame, the tool calls a node's model asked for (`_place` reads them)."""
    graph = CURRENT_FRAME.get(None)
    if graph is None:
        return
    for ids in _asked(output):
        asked = _ASKED.get(graph)
        if asked is None:
            asked = _ASKED.setdefault(graph, {})
        asked.update(dict.fromkeys(ids, ids))


def _asked(output: Any) -> list[tuple[str, ...]]:
    """The tool call ids of each AI message in a node's output (a state update, a `Command`'s, a list)
    that asked for more than one, an answer's ids together. It runs after every node of a recorded
    graph: the messages of a list are looked at in the loop (no call each), and a message that is not
    an AI one is passed over at once (pydantic's `__getattr__` would raise and catch an AttributeError
    looking for a `Command`'s `update`)."""
    if not isinstance(output, (dict, list, tuple, BaseMessage, str)) and output is not None:
        output = getattr(output, "update", None)  # a `Command`
    if isinstance(output, dict):
        output = output.get("messages")
    found: list[tuple[str, ...]] = []
    for item in output if isinstance(output, (list, tuple)) else (output,):
        if isinstance(item, AIMessage):
            if len(item.tool_calls) > 1:  # a lone call needs no place (`_place`)
                ids = tuple(str(call["id"]) for call in item.tool_calls if call.get("id"))
                if len(ids) > 1:
                    found.append(ids)
        elif item is not None and not isinstance(item, (BaseMessage, str)):
            found.extend(_asked(item))
    return found


def _arguments(tool: BaseTool, tool_input: Any) -> Any:
    """The call's arguments as the model gave them: those of the tool's `tool_call_schema`."""
    if not isinstance(tool_input, dict):
        return tool_input
    fields = getattr(tool.tool_call_schema, "model_fields", None)
    if not isinstance(fields, dict):
        return tool_input
    return {key: value for key, value in tool_input.items() if key in fields}


def _parts(output: Any) -> Any:
    """A tool's output as the journal holds it: a `ToolMessage` as its content (with its artifact and
    status, when it has an artifact or failed)."""
    if not isinstance(output, ToolMessage):
        return output
    if output.artifact is None and output.status == "success":
        return output.content
    return {_MESSAGE: {"content": output.content, "artifact": output.artifact, "status": output.status}}


def _message(tool: BaseTool, output: Any, tool_call_id: str | None) -> Any:
    """The journaled output as the tool gave it: for a model's call, the `ToolMessage` made again."""
    parts = output.get(_MESSAGE) if isinstance(output, dict) and len(output) == 1 else None
    if isinstance(parts, dict):
        content, artifact, status = parts["content"], parts.get("artifact"), parts.get("status", "success")
    elif tool_call_id is not None and isinstance(output, (str, list)):  # message content, as `run` made it
        content, artifact, status = output, None, "success"
    else:
        return output
    return ToolMessage(content, artifact=artifact, tool_call_id=tool_call_id or "", name=tool.name, status=status)


def _answer(output: Any) -> Any:
    """A graph's result as its frame's output: the last message's text when it keeps messages."""
    messages = output.get("messages") if isinstance(output, dict) else None
    if isinstance(messages, list) and messages:
        return getattr(messages[-1], "content", None)
    return None
