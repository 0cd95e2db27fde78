"""Agent frameworks recorded whole, with no decorator in the user's code: one module each, imported only
when its `devtool.instrument.<framework>()` is called (importing this package imports no framework).

- `pydantic_ai.py`: every `Agent` run is an agent frame (its `name`), every tool call a journaled one, by
  a capability (`wrap_run`, `wrap_tool_execute`) added to each run made in a recorded run.
- `openai_agents.py`: every `Runner` run is an agent frame (the starting agent's `name`), a handoff a
  frame of the agent handed to, inside the one that handed off, and every `FunctionTool` call a journaled
  one (its `on_invoke_tool`); an agent run as a tool runs inside that tool call.
- `langchain.py`: every `BaseTool` call (LangChain and LangGraph's `ToolNode`) a journaled tool call, every
  LangGraph graph run (`invoke`/`ainvoke`, subgraphs too) an agent frame named by the graph's `name`.

Their tools go through `functions.journaled_tool` (core's `call_function`, as `@devtool.tool`): a replay
returns the recorded output and does not run the tool. Outside a recorded run they change nothing.
"""
