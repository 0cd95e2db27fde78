"""Where blocking work ran: Python's audit events (PEP 578) raised in a block, each with whether an event
loop was running in the thread that raised it. Nothing is replaced: the real call runs, and the test
learns whether a route did it on the event loop or in a worker thread."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Iterator
from typing import Any

_listening: tuple[frozenset[str], list[tuple[str, bool]]] | None = None
_hooked = False


def _hook(event: str, args: tuple[Any, ...]) -> None:
    listening = _listening
    if listening is not None and event in listening[0]:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            listening[1].append((event, False))
        else:
            listening[1].append((event, True))


@contextlib.contextmanager
def audited(*events: str) -> Iterator[list[tuple[str, bool]]]:
    """Each of `events` raised in the block, in order: (the event, whether an event loop ran in its thread)."""
    global _listening, _hooked
    if not _hooked:
        sys.addaudithook(_hook)  # for good (a hook cannot be removed): it notes nothing outside this block
        _hooked = True
    seen: list[tuple[str, bool]] = []
    _listening = (frozenset(events), seen)
    try:
        yield seen
    finally:
        _listening = None
