"""Agent frameworks recorded whole, with no decorator in the user's code: one module each, imported only
when its `devtool.instrument.<framework>()` is called (importing this package imports no framework).

- `pydantic_ai.py`: every `Agent` run is an agent frame (its `name`), opened by a wrapper of `Agent.iter`,
  and every tool call a journaled one, in a wrapper of `FunctionToolset.call_tool` (no capability: each
  costs every hook of a step a `RunContext` copy).
- `openai_agents.py`: every `Runner` run is an agent frame (the starting agent's `name`), a handoff a
  frame of the agent handed to, inside the one that handed off, and every `FunctionTool` call a journaled
  one (its `on_invoke_tool`); an agent run as a tool runs inside that tool call.
- `langchain.py`: every `BaseTool` call (LangChain and LangGraph's `ToolNode`) a journaled tool call, every
  LangGraph graph run (`invoke`/`ainvoke`, subgraphs too) an agent frame named by the graph's `name`,
  and each run of its nodes a frame named by the node.

Their tools go through `functions.journaled_tool` (core's `call_function`, as `@devtool.tool`): a replay
returns the recorded output and does not run the tool. Outside a recorded run they change nothing.

`when_imported(name, then)`: `then()` once the top-level module `name` is imported (now, if it is), so
that `install()` instruments a framework the program imports later without importing it itself.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
import warnings
from collections.abc import Callable, Sequence
from types import ModuleType

_lock = threading.Lock()


def when_imported(name: str, then: Callable[[], object]) -> None:
    """`then()` now if module `name` is imported, else right after its import (once)."""
    with _lock:
        if name not in sys.modules:
            _FINDER.waiting.setdefault(name, []).append(then)
            if _FINDER not in sys.meta_path:
                sys.meta_path.insert(0, _FINDER)
            return
    _call(name, then)


def _call(name: str, then: Callable[[], object]) -> None:
    try:
        then()
    except Exception as exc:  # the program's import must not fail for want of its recording
        warnings.warn(f"devtool: {name} was not instrumented: {exc}", RuntimeWarning, stacklevel=2)


class _AfterImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: hands the import of a waited-for module to the other finders, and runs
    what waits for it once its code has run."""

    def __init__(self) -> None:
        self.waiting: dict[str, list[Callable[[], object]]] = {}

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        with _lock:
            waiting = self.waiting.pop(fullname, None)
        if waiting is None:
            return None
        spec = importlib.util.find_spec(fullname)  # by the other finders: this one waits for it no more
        if spec is None or spec.loader is None:
            return spec
        spec.loader = _Then(spec.loader, fullname, waiting)
        return spec


class _Then(importlib.abc.Loader):
    """A module's own loader, and after its code ran, what waited for it."""

    def __init__(self, loader: importlib.abc.Loader, name: str, waiting: list[Callable[[], object]]) -> None:
        self.loader, self.name, self.waiting = loader, name, waiting

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        # The module is its own loader's, as if this one had never been there (resources, source lookups).
        module.__loader__ = self.loader
        if module.__spec__ is not None:
            module.__spec__.loader = self.loader
        self.loader.exec_module(module)
        for then in self.waiting:
            _call(self.name, then)


_FINDER = _AfterImport()
