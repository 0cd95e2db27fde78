"""Benchmark of one live append: a batch of events (100 unless `--size`) into a run that already has N events.

    python bench/bench_append.py [--prior 0,60000,600000] [--batches 60] [--size 100]

What `POST /api/v1/traces` costs the store per batch (`append_events`, events already checked by the
gate: the SQL, the exactly-once check, the commit), apart from HTTP and fan-out, which
`bench_live.py` measures whole. For each N: a fresh DuckDB file, N events of one agent's turns
appended in batches of 5,000 and derived, then `--batches` appends of `--size` more; prints the median
CPU time (process, all threads) and wall time of an append. Run it with `PYTHONPATH` at another
checkout to compare two versions on the same machine at the same time. `--size` (events a batch)
tells an append's fixed cost from its cost an event: run it at 2 and at 1,024.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from itertools import count
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from devtool.store import Store, append_events

TRACE = "b" * 32


class Turns:
    """Turn spans under one agent, as start/end events, in time order."""

    def __init__(self) -> None:
        self.ids = count(1)
        self.now = 1_790_000_000_000.0
        self.events: list[dict[str, Any]] = []
        self.root = self._emit("agent:start", "")

    def _emit(self, kind: str, parent: str, span: str | None = None) -> str:
        span = span or f"{next(self.ids):016x}"
        self.now += 1
        trace = {"traceId": TRACE, "spanId": span, "parentSpanId": parent}
        self.events.append({"schemaVersion": 1, "type": kind, "timestamp": self.now, "agentId": "a", "trace": trace})
        return span

    def more(self, n: int) -> list[dict[str, Any]]:
        start = len(self.events)
        while len(self.events) < start + n:
            span = self._emit("turn:start", self.root)
            self._emit("turn:end", self.root, span)
        return self.events[start : start + n]


def measure(prior: int, batches: int, size: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as folder:
        store = Store(Path(folder) / "append.duckdb")
        turns = Turns()
        for _ in range(0, prior, 5000):
            append_events(store, turns.more(5000), derive=False)
        store.derive_backlog()
        cpu, wall = [], []
        for _ in range(batches):
            batch = turns.more(size)
            began_cpu, began = time.process_time(), time.perf_counter()
            append_events(store, batch, derive=False)
            cpu.append(time.process_time() - began_cpu)
            wall.append(time.perf_counter() - began)
        store.close()
    return statistics.median(cpu) * 1000, statistics.median(wall) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--prior", default="0,60000,600000", help="events in the run before (comma-separated)")
    parser.add_argument("--batches", type=int, default=60)
    parser.add_argument("--size", type=int, default=100, help="events a batch (default 100)")
    args = parser.parse_args()
    for prior in (int(n) for n in args.prior.split(",")):
        cpu, wall = measure(prior, args.batches, args.size)
        shown = f"median CPU {cpu:.2f} ms, wall {wall:.2f} ms"
        print(f"run of {prior:,} events: an append of {args.size:,} events, {shown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
