"""`@replayable`: the code that owns an agent entrypoint says that the DevTool may run it again.

The DevTool's Replay button runs a run's recorded entrypoint (`module:function`, which `devtool run`
records) in a child process, and a recorded trace can come from anyone: a teammate's file, an
upload, an agent that posted it. So a replay never runs a function because it happens to be
importable; it runs one that the module defining it marks:

    from devtool.core import replayable

    @replayable
    async def main(props): ...

(or `main = replayable(fn)`). The DevTool finds the mark in the module's source before it starts
anything (it imports nothing of the module), and the child (`devtool run --only-replayable`) checks
the imported function again: a look-alike decorator of another name's making does not count.
"""

from __future__ import annotations

from typing import TypeVar

F = TypeVar("F")

MARK = "__devtool_replayable__"


def replayable(entrypoint: F) -> F:
    """Mark `entrypoint` (a function taking the run's props, or an agent) as one the DevTool may replay."""
    try:
        setattr(entrypoint, MARK, True)
    except (AttributeError, TypeError):
        raise TypeError(f"@replayable marks functions and agents, not {type(entrypoint).__name__}") from None
    return entrypoint


def is_replayable(target: object) -> bool:
    """Whether `target` was marked by `replayable` (an attribute that is merely truthy does not count)."""
    return getattr(target, MARK, None) is True
