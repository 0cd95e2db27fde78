"""The emitter's deferred work (`Emitter.defer`): done once, in the order it was handed over, before
any event emitted after it, when the run's state is read and at flush; whichever thread does it."""

from __future__ import annotations

import itertools
import threading
from typing import Any

from devtool.core.events import Emitter, TraceEvent


def event(name: str) -> TraceEvent:
    return {"schemaVersion": 1, "type": name, "timestamp": 0.0, "agentId": "a", "trace": {}}  # type: ignore[typeddict-item]


class Heard:
    """A sink that keeps the events' types, and a buffering one's flushes."""

    def __init__(self) -> None:
        self.types: list[str] = []
        self.flushed_after: list[int] = []

    def __call__(self, e: TraceEvent) -> None:
        self.types.append(e["type"])

    def flush(self) -> None:
        self.flushed_after.append(len(self.types))


def test_deferred_events_reach_sinks_before_any_event_emitted_after_them() -> None:
    heard = Heard()
    emitter = Emitter([heard])
    emitter.defer(lambda: emitter.send(event("first")))
    emitter.defer(lambda: emitter.send(event("second")))
    assert heard.types == []  # not on the caller's path
    emitter.emit(event("third"))
    assert heard.types == ["first", "second", "third"]


def test_settle_and_flush_do_the_pending_work_once_and_a_failing_piece_loses_nothing_after_it() -> None:
    heard, done = Heard(), []
    emitter = Emitter([heard])

    def failing() -> None:
        raise ValueError("bookkeeping broke")

    emitter.defer(lambda: done.append(1))
    emitter.defer(failing)
    emitter.defer(lambda: emitter.send(event("after the failure")))
    with emitter.settled():
        assert done == [1]
        assert heard.types == ["after the failure"]
    emitter.settle()
    emitter.defer(lambda: emitter.send(event("at flush")))
    emitter.flush()
    assert done == [1]
    assert heard.types == ["after the failure", "at flush"]
    assert heard.flushed_after == [2]  # the sink flushed after the deferred work reached it


def test_work_handed_over_from_many_threads_while_others_settle_and_emit_runs_once_in_order() -> None:
    """Eight threads defer numbered work (each number taken with its `defer`, so the numbers are the
    order of handing over) while two others settle and emit, and the drainer thread drains."""
    emitter, done, emitted = Emitter([]), [], []
    numbers, handing = itertools.count(), threading.Lock()
    stop = threading.Event()

    def work(n: int) -> Any:
        return lambda: done.append(n)

    def hand_over() -> None:
        for _ in range(500):
            with handing:
                emitter.defer(work(next(numbers)))

    def read() -> None:
        while not stop.is_set():
            emitter.settle()
            emitter.emit(event("tick"))
            emitted.append(len(done))

    handers = [threading.Thread(target=hand_over) for _ in range(8)]
    readers = [threading.Thread(target=read) for _ in range(2)]
    for thread in readers + handers:
        thread.start()
    for thread in handers:
        thread.join()
    stop.set()
    for thread in readers:
        thread.join()
    emitter.settle()
    assert done == list(range(8 * 500))
    assert emitted  # the readers did read while work was handed over
