from __future__ import annotations

import asyncio
from typing import Any

import pytest

from devtool.core.scoped import run_in


class Noted:
    """A scope that notes what was done to it."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def open(self) -> None:
        self.calls.append(("open", None))

    def close(self, result: Any = None, *, error: BaseException | None = None) -> None:
        self.calls.append(("close", error if error is not None else result))


def test_a_sync_or_async_function_runs_inside_the_scope_which_closes_with_its_result() -> None:
    async def answer() -> int:
        return 42

    for fn in (lambda: 42, answer):
        scope = Noted()
        assert asyncio.run(run_in(scope, fn)) == 42
        assert scope.calls == [("open", None), ("close", 42)]


def test_an_error_closes_the_scope_with_it_and_goes_on_up() -> None:
    scope = Noted()
    failure = ValueError("no")

    async def fail() -> None:
        raise failure

    with pytest.raises(ValueError, match=r"^no$") as raised:
        asyncio.run(run_in(scope, fail))
    assert raised.value is failure
    assert scope.calls == [("open", None), ("close", failure)]
