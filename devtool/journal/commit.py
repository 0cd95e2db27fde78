"""Group commit: many concurrent appends made durable by one write and one fsync.

Each `submit` still returns only once its own line is on disk; what changes is that while one batch
is being written and fsync'd, every append that arrives queues up and goes into the next batch
together. With many tasks appending at once, the cost of an fsync is shared by hundreds of entries.
A single task appending in a loop gains nothing (it waits for each fsync), which is why group commit
is an option and not the default.

If the task awaiting an append is cancelled, its line may still be written: it is already queued.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

Item = TypeVar("Item")
_Waiter = tuple[asyncio.AbstractEventLoop, "asyncio.Future[None]"]


class GroupCommitter(Generic[Item]):
    """Batches items for a blocking `write(batch)` that runs in a worker thread, one batch at a time."""

    def __init__(self, write: Callable[[Sequence[Item]], None]) -> None:
        self._write = write
        self._mutex = threading.Lock()
        self._pending: list[Item] = []
        self._waiters: list[_Waiter] = []
        self._draining = False
        self._idle = threading.Event()
        self._idle.set()

    async def submit(self, item: Item) -> None:
        """Queue an item and wait until the batch holding it is written."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        with self._mutex:
            self._pending.append(item)
            self._waiters.append((loop, done))
            start = not self._draining
            if start:
                self._draining = True
                self._idle.clear()
        if start:
            threading.Thread(target=self._drain, name="devtool-journal-commit", daemon=True).start()
        await done

    async def wait_idle(self) -> None:
        """Wait until everything submitted so far is written."""
        await asyncio.to_thread(self._idle.wait)

    def _drain(self) -> None:
        while True:
            with self._mutex:
                batch, waiters = self._pending, self._waiters
                self._pending, self._waiters = [], []
                if not batch:
                    self._draining = False
                    self._idle.set()
                    return
            error: BaseException | None = None
            try:
                self._write(batch)
            except Exception as exc:
                error = exc
            _settle(waiters, error)


def _settle(waiters: list[_Waiter], error: BaseException | None) -> None:
    by_loop: dict[asyncio.AbstractEventLoop, list[asyncio.Future[None]]] = {}
    for loop, future in waiters:
        by_loop.setdefault(loop, []).append(future)
    for loop, futures in by_loop.items():
        # A loop that has closed meanwhile has nobody left waiting.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(_resolve, futures, error)


def _resolve(futures: list[asyncio.Future[None]], error: BaseException | None) -> None:
    for future in futures:
        if future.done():
            continue
        if error is None:
            future.set_result(None)
        else:
            future.set_exception(error)
