"""SIGKILL during ingest: a real `devtool serve` is killed while batches stream in, restarted on the
same database, and what it acknowledged is checked, for `tests/test_web_ingest_crash.py` (a few
rounds) and `bench/soak.py` (as many as asked).

Each batch is a run of its own (its trace id names it), so the store says exactly what it holds of
each: every batch the server answered 200 must be there whole, and no batch may be there in part
(an answer lost with the connection may leave a batch stored or not, but never half of it).
"""

from __future__ import annotations

import json
import random
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from devtool.store import Store
from testkit.served import Served, start

T0 = 1_790_000_000_000


@dataclass
class CrashReport:
    """What the rounds did and what the store held afterwards."""

    rounds: int = 0
    batches_sent: int = 0
    acknowledged_batches: int = 0
    acknowledged_events: int = 0
    restarts: list[float] = field(default_factory=list)  # seconds from restart to the first answer
    lost: list[str] = field(default_factory=list)  # acknowledged batches not found whole
    partial: list[str] = field(default_factory=list)  # batches found in part
    pages_down: list[str] = field(default_factory=list)  # after a restart, `/` did not answer 200


def batch(trace_id: str, size: int) -> list[dict[str, Any]]:
    """A run of `size` events: a root span and `size // 2 - 1` children, each opened and closed."""
    root = f"{trace_id[:15]}r"
    events: list[dict[str, Any]] = []

    def add(type_: str, span: str, parent: str, **fields: Any) -> None:
        trace = {"traceId": trace_id, "spanId": span, "parentSpanId": parent}
        events.append({"schemaVersion": 1, "type": type_, "timestamp": T0 + len(events), "trace": trace, **fields})

    add("agent:start", root, "", agentId="crash")
    for n in range(size // 2 - 1):
        span = f"{n:016x}"
        add("custom:span:start", span, root, name=f"step {n}")
        add("custom:span:end", span, root, name=f"step {n}", success=True)
    add("agent:end", root, "", agentId="crash", success=True)
    return events


def _post(url: str, body: bytes) -> int | None:
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            response.read()
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except OSError:
        return None  # killed under us: the answer is lost


def kill_during_ingest(
    db: Path, log: Path, *, rounds: int, size: int = 200, writers: int = 2, seed: int = 0
) -> CrashReport:
    """`rounds` times: start the server on `db`, post batches from `writers` threads, SIGKILL it at a
    random moment; then start it once more and check every batch ever sent against the store."""
    rng = random.Random(seed)
    report = CrashReport()
    sent: dict[str, int | None] = {}
    lock = threading.Lock()
    for round_ in range(rounds):
        served = restart(db, log, report)
        stop = threading.Event()

        def write(writer: int, url: str, round_: int = round_, stop: threading.Event = stop) -> None:
            n = 0
            while not stop.is_set():
                trace_id = f"{round_:08x}{writer:08x}{n:016x}"
                n += 1
                status = _post(url, json.dumps(batch(trace_id, size)).encode())
                with lock:
                    sent[trace_id] = status
                if status is None:
                    return

        threads = [threading.Thread(target=write, args=(w, f"{served.url}api/v1/traces")) for w in range(writers)]
        kill_round(served, threads, stop, rng.uniform(0.3, 1.5), report)
    held = stored_counts(db, log, report)
    report.batches_sent = len(sent)
    for trace_id, status in sent.items():
        count = held.get(trace_id, 0)
        if status == 200:
            report.acknowledged_batches += 1
            report.acknowledged_events += size
            if count != size:
                report.lost.append(f"{trace_id}: {count} of {size}")
        elif count not in (0, size):
            report.partial.append(f"{trace_id}: {count} of {size} (answer {status})")
    return report


def kill_round(
    served: Served, threads: list[threading.Thread], stop: threading.Event, after: float, report: CrashReport
) -> None:
    """Start `threads`, SIGKILL the server `after` seconds on, tell them to stop and wait for them."""
    for thread in threads:
        thread.start()
    time.sleep(after)
    served.kill()
    stop.set()
    for thread in threads:
        thread.join(timeout=90)
    report.rounds += 1


def stored_counts(db: Path, log: Path, report: CrashReport, *args: str) -> dict[str, int]:
    """Start the server on `db` once more (a restart after the last kill) and stop it; then the events
    the store holds of each trace."""
    restart(db, log, report, *args).stop()
    store = Store(db)
    try:
        return dict(store.query("SELECT trace_id, count(*) FROM events GROUP BY 1"))
    finally:
        store.close()


def restart(db: Path, log: Path, report: CrashReport, *args: str) -> Served:
    """Start the server on `db` (with `args`), its time to answer and whether `/` answers put in `report`."""
    began = time.perf_counter()
    served = start(db, *args, log=log)
    report.restarts.append(time.perf_counter() - began)
    try:
        with urllib.request.urlopen(served.url, timeout=30) as response:
            if response.status != 200:
                report.pages_down.append(f"/ answered {response.status}")
    except OSError as exc:
        report.pages_down.append(f"/ failed: {exc}")
    return served
