"""`run_in`: a function run with a scope (a run's root, an agent's frame) open around it."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, Protocol


class Scope(Protocol):
    """What `RunScope` and `AgentScope` share: opened before their code runs, closed with its outcome."""

    def open(self) -> object: ...

    def close(self, result: Any = None, *, error: BaseException | None = None) -> None: ...


async def run_in(scope: Scope, fn: Callable[[], Any]) -> Any:
    """`fn()` (awaited when it returns an awaitable) inside `scope`: open before it, closed with its
    result, or with the error it raised, which goes on up."""
    scope.open()
    try:
        result = fn()
        if inspect.isawaitable(result):
            result = await result
    except BaseException as exc:
        scope.close(error=exc)
        raise
    scope.close(result)
    return result
