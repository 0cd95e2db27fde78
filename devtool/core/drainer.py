"""The thread that settles deferred work: what an `Emitter` was handed to do later (`Emitter.defer`).

A recorded SDK request hands its bookkeeping (building its events, its journal entry, its usage and
cost) to the run's emitter instead of doing it between the SDK's own steps, where each of our
instructions costs several times what it costs run back to back (BENCHMARKS.md, issue 15). The work
is done in order before any later event of the run is emitted, whenever the run's state is read
(a snapshot, the run's end), and otherwise here: `DRAIN_INTERVAL` after an emitter's first pending
work, in one batch, so that a stream of requests is settled a batch at a time and a run that waits
on its provider still shows each turn within that interval (less what the settled work itself takes).

One daemon thread for the process, started on first use, started again in a forked child; at the
interpreter's exit whatever is still pending is settled.
"""

from __future__ import annotations

import atexit
import os
import queue
import threading
import time
from typing import Final, Protocol

DRAIN_INTERVAL: Final = 0.05


class Settles(Protocol):
    def settle(self) -> None: ...


class Drainer:
    """Settles the emitters it is told of, `interval` seconds after the first of a batch."""

    def __init__(self, interval: float = DRAIN_INTERVAL) -> None:
        self.interval = interval
        self._reset()

    def _reset(self) -> None:
        # A queue in C: telling the thread is one `put`, on the request's path once per batch.
        self._due: queue.SimpleQueue[Settles] = queue.SimpleQueue()
        self._wake = threading.Event()
        # Held while a batch is taken off `_due` and settled: a settling at exit waits for the thread's
        # batch, whose emitters are no longer in `_due`, instead of finding nothing and letting the
        # interpreter stop the thread halfway through them.
        self._draining = threading.Lock()
        self._thread: threading.Thread | None = None
        self._starting = threading.Lock()

    def due(self, emitter: Settles) -> None:
        """`emitter` has work pending: settle it within `interval`."""
        self._due.put(emitter)
        if not self._wake.is_set():
            self._wake.set()
        if self._thread is None:
            with self._starting:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name="devtool-drainer", daemon=True)
                    self._thread.start()

    def settle_all(self) -> bool:
        """Settle every emitter with work pending now (at exit: the thread may never run again); False
        if none had any."""
        with self._draining:
            due: dict[Settles, None] = {}
            while True:
                try:
                    due[self._due.get_nowait()] = None
                except queue.Empty:
                    break
            for emitter in due:
                emitter.settle()
            return bool(due)

    def _run(self) -> None:
        # While runs record, the thread wakes once an interval (work handed over meanwhile does not wake
        # it: a `put` to a sleeping thread takes no switch of the interpreter's lock); after an
        # interval with none, it waits for the next. Cleared before the batch is taken: work handed
        # over after that sets it again, so none waits for a later run's work to be drained.
        while True:
            self._wake.wait()
            while True:
                time.sleep(self.interval)
                self._wake.clear()
                if not self.settle_all():
                    break


DRAINER: Final = Drainer()
atexit.register(DRAINER.settle_all)
# A forked child has no drainer thread and none of its parent's pending emitters.
os.register_at_fork(after_in_child=DRAINER._reset)
