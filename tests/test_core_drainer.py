"""The drainer thread (`drainer.py`): it settles an emitter's deferred work within its interval with no
one asking, keeps no process alive, and what is still pending at the interpreter's exit is done."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

from devtool.core.drainer import DRAIN_INTERVAL
from devtool.core.events import Emitter
from testkit.checkout import child_env


def test_the_drainer_settles_pending_work_on_its_own_thread_within_its_interval() -> None:
    emitter = Emitter([])
    done: list[tuple[int, str, float]] = []
    handed = time.perf_counter()
    for n in range(3):
        emitter.defer(lambda n=n: done.append((n, threading.current_thread().name, time.perf_counter())))
    deadline = handed + 10
    while len(done) < 3 and time.perf_counter() < deadline:
        time.sleep(0.005)
    assert [n for n, _, _ in done] == [0, 1, 2]
    assert {thread for _, thread, _ in done} == {"devtool-drainer"}
    # Within the interval, with slack for a shared, loaded machine (the point: not at the run's end).
    assert done[0][2] - handed < DRAIN_INTERVAL + 1.0


def test_work_handed_over_after_a_drain_is_drained_again() -> None:
    emitter, done = Emitter([]), []
    for batch in range(3):
        emitter.defer(lambda batch=batch: done.append(batch))
        deadline = time.perf_counter() + 10
        while len(done) <= batch and time.perf_counter() < deadline:
            time.sleep(0.005)
    assert done == [0, 1, 2]


CHILD = """
import sys, time
from devtool.core.events import Emitter

written = open(sys.argv[1], "w")
emitter = Emitter([lambda event: written.write(event["type"] + "\\n")])

def later(n):
    def work():
        time.sleep(0.002)
        emitter.send({"type": f"deferred {n}"})
    return work

for n in range(200):
    emitter.defer(later(n))
print("handed over", flush=True)
"""


def test_a_process_exits_with_its_drainer_running_and_its_pending_work_done(tmp_path: Path) -> None:
    """200 pieces of work taking ~0.4 s are pending when the script's last line runs: the process still
    exits by itself (the drainer is a daemon), having done every piece, in order, once."""
    out = tmp_path / "events.txt"
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(out)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=child_env(),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "handed over\n"
    assert out.read_text().splitlines() == [f"deferred {n}" for n in range(200)]
