"""LangChain and LangGraph recorded whole: each tool call a journaled call, each graph run and each node
run an agent frame.

LangChain's callbacks only watch (a handler cannot answer a tool call, and LangGraph runs them where a
ContextVar they set is lost), so they serve neither. The public extension points that can: a tool is a
`BaseTool`, and every way of calling one (`invoke`, LangGraph's `ToolNode`, an agent executor) ends in
its public `run`/`arun`; a graph is a `Pregel`, run by its public `invoke`/`ainvoke` (a subgraph too, as
a node). Both are wrapped on their classes. A tool call is journaled by its arguments (the ones its
`tool_call_schema` shows the model: arguments LangGraph injects, its state or runtime, are left out)
and its content (with its artifact and status when it has them: the `ToolMessage` is made again with
the call's id), so a replay answers it without running the tool. A graph run is a frame named by the
graph's `name` (`create_agent(name=...)`), whose output is its last message's text. A node has no
public hook: a node made of functions (LangGraph's `RunnableCallable`, which calls its `func`/`afunc`
in the node's own context) has them wrapped, once a graph, at its first recorded run, so each run of
the node is a frame named by the node (`model`, `tools`, ...). `stream`/`astream` called directly run
no frame of their own: their nodes and tools are still recorded, in the frame they run in.
"""

from __future__ import annotations

import functools
import importlib.util
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool

from devtool.core.frame import CURRENT_FRAME
from devtool.instrument.functions import agent_frame, journaled_tool, journaled_tool_sync

_MARK = "__devtool_recorded__"
_MESSAGE = "langchainToolMessage"  # a journaled output that is a ToolMessage's parts


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
        output = journaled_tool_sync(
            self.name,
            _arguments(self, tool_input),
            lambda: _parts(run(self, tool_input, *args, tool_call_id=tool_call_id, **kwargs)),
            tool_call_id=tool_call_id,
        )
        return _message(self, output, tool_call_id)

    @functools.wraps(arun)
    async def recorded_arun(
        self: BaseTool, tool_input: Any, *args: Any, tool_call_id: str | None = None, **kwargs: Any
    ) -> Any:
        if CURRENT_FRAME.get(None) is None:
            return await arun(self, tool_input, *args, tool_call_id=tool_call_id, **kwargs)

        async def running() -> Any:
            return _parts(await arun(self, tool_input, *args, tool_call_id=tool_call_id, **kwargs))

        output = await journaled_tool(self.name, _arguments(self, tool_input), running, tool_call_id=tool_call_id)
        return _message(self, output, tool_call_id)

    for name, wrapped in (("run", recorded_run), ("arun", recorded_arun)):
        setattr(wrapped, _MARK, True)
        setattr(BaseTool, name, wrapped)


def _wrap_graphs() -> None:
    from langgraph.pregel import Pregel

    invoke, ainvoke = Pregel.invoke, Pregel.ainvoke

    @functools.wraps(invoke)
    def recorded_invoke(self: Pregel[Any, Any, Any, Any], input: Any, *args: Any, **kwargs: Any) -> Any:
        _frame_nodes(self)
        with agent_frame(self.name or "graph", lambda: None) as result:
            output = invoke(self, input, *args, **kwargs)
            result.append(_answer(output))
        return output

    @functools.wraps(ainvoke)
    async def recorded_ainvoke(self: Pregel[Any, Any, Any, Any], input: Any, *args: Any, **kwargs: Any) -> Any:
        _frame_nodes(self)
        with agent_frame(self.name or "graph", lambda: None) as result:
            output = await ainvoke(self, input, *args, **kwargs)
            result.append(_answer(output))
        return output

    for name, wrapped in (("invoke", recorded_invoke), ("ainvoke", recorded_ainvoke)):
        setattr(wrapped, _MARK, True)
        setattr(Pregel, name, wrapped)


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
        with agent_frame(name, lambda: None) as result:
            output = func(*args, **kwargs)
            result.append(_answer(output))
        return output

    return node


def _framed_async(name: str, afunc: Any) -> Any:
    @functools.wraps(afunc)
    async def node(*args: Any, **kwargs: Any) -> Any:
        with agent_frame(name, lambda: None) as result:
            output = await afunc(*args, **kwargs)
            result.append(_answer(output))
        return output

    return node


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
