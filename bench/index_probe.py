"""Serving while a big run's rewind index is built: live appends' and pages' times, and memory split.

    python bench/index_probe.py DB TRACE_ID [--before 10] [--no-pages]   # the app, serving
    python bench/index_probe.py DB TRACE_ID --alone                        # the build alone
    ... [--memory-limit 1GiB]                                              # DuckDB's, as `devtool serve` takes it

Serving (what `bench_scale.py` runs on a copy of a loaded store): the app `devtool serve` runs, in
this process through Starlette's TestClient, with its background indexer; every 100 ms a live batch
of 50 events of another run (`POST /api/v1/traces`, what an agent's `HttpSink` sends) and the big
run's page with a span selected (unless `--no-pages`). Each request's server time (`Server-Timing`)
is put in the phase it falls in: `before` (the indexer's first look is at once, and it starts on its
second, `--before` seconds later), `keys` (the run's span keys being made), `index` (the rewind
index being built), `after` (5 s more).

Alone: `build_index` of the run, in this process (its walk in a child), with nothing else running.

Either way, every 100 ms or so: the RSS of the process and its children (the index's walk runs in
one), and DuckDB's own memory (`duckdb_memory()`: its buffer pool, held to the store's memory limit,
by tag). What the build itself holds (the index walk's
Python objects, DuckDB's allocations outside its buffer pool) is the RSS less DuckDB's memory; each
peak is reported over its value before. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from array import array
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_rewind import server_ms
from devtool.cli.serve import MEMORY_LIMIT

PHASES = ("before", "keys", "index", "after")


def load_average() -> str:
    return "/".join(f"{value:.1f}" for value in os.getloadavg())


class Memory:
    """Samples of the process's RSS and DuckDB's memory (MiB), taken by a thread of its own. Only their
    peaks and an (RSS, DuckDB's) pair a sample are kept: an hour of samples kept whole, with their tags,
    was ~20 MiB of this process's own RSS, counted in what it measures."""

    def __init__(self, store: Any, log: Path | None = None) -> None:
        self._cursor = store.reader()
        self._log = log  # a line of the peaks so far each minute: a probe cut short still leaves them
        self.children_peak = 0.0  # the RSS of the process's children together (the index's walk)
        self.phase = PHASES[0]  # the phase each sample is put in (`serving` moves it on)
        self._series = array("f")  # RSS, DuckDB's, RSS, DuckDB's, ... a pair a sample
        self._tags: dict[str, float] = {}  # each of DuckDB's tags at its peak
        self._phases: dict[str, dict[str, Any]] = {}  # each phase's RSS peak, with DuckDB's tags at it
        self.before = self.sample()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-memory", daemon=True)
        self._thread.start()

    def sample(self) -> tuple[float, float, dict[str, float]]:
        pid = os.getpid()
        children = sum(_rss(child) for child in _family(pid)[1:])
        self.children_peak = max(self.children_peak, children)
        rss = _rss(pid) + children
        rows = self._cursor.execute("SELECT tag, memory_usage_bytes FROM duckdb_memory()").fetchall()
        tags = {tag: used / 2**20 for tag, used in rows if used}
        return rss, sum(tags.values()), tags

    def _take(self) -> None:
        rss, duck, tags = self.sample()
        self._series.extend((rss, duck))
        for tag, used in tags.items():
            self._tags[tag] = max(self._tags.get(tag, 0.0), used)
        if rss > self._phases.get(self.phase, {}).get("rss", -1.0):
            tagged = {tag: round(used) for tag, used in sorted(tags.items()) if used >= 1}
            self._phases[self.phase] = {
                "rss": round(rss),
                "duckdb": round(duck),
                "rest": round(rss - duck),
                "tags": tagged,
            }

    def _run(self) -> None:
        logged = time.monotonic()
        while not self._stop.wait(0.1):
            self._take()
            if self._log is not None and time.monotonic() - logged >= 60:
                logged = time.monotonic()
                line = {
                    "at": time.strftime("%H:%M:%S"),
                    "load": load_average(),
                    "phase": self.phase,
                    "rss": round(self._series[-2]),
                    "duckdb": round(self._series[-1]),
                    "children peak": round(self.children_peak),
                    "peak by phase": self._phases,
                }
                with self._log.open("a") as out:
                    out.write(json.dumps(line) + "\n")

    def report(self) -> dict[str, Any]:
        self._stop.set()
        self._thread.join()
        self._cursor.close()
        rss0, duck0, tags0 = self.before
        pairs = list(zip(self._series[::2], self._series[1::2], strict=True)) or [(rss0, duck0)]
        tags = self._tags or tags0
        return {
            "rss before": rss0,
            "rss peak": max(rss for rss, _ in pairs),
            "duckdb before": duck0,
            "duckdb peak": max(duck for _, duck in pairs),
            "rest before": rss0 - duck0,
            "rest peak": max(rss - duck for rss, duck in pairs),
            "children peak": self.children_peak,
            "duckdb peak by tag": {tag: round(used) for tag, used in sorted(tags.items()) if used >= 1},
            "peak by phase": self._phases,
            # (RSS, DuckDB's) at twelve moments, first to last: growth shows as a slope
            "series": [(round(rss), round(duck)) for rss, duck in pairs[:: max(1, len(pairs) // 12)]],
        }


def _family(pid: int) -> list[int]:
    """`pid` and its descendants (the rewind index's walk runs in a child process)."""
    children: list[int] = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            children += [int(child) for child in (task / "children").read_text().split()]
    except OSError:
        pass  # it, or a thread of it, ended meanwhile
    return [pid, *(found for child in children for found in _family(child))]


def _rss(pid: int) -> float:
    """A process's resident memory, MiB (0 if it ended meanwhile)."""
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, IndexError):
        return 0.0


def alone(db: Path, trace_id: str, memory_limit: str, log: Path | None) -> dict[str, Any]:
    from devtool.actions.frame_indexer import build_index
    from devtool.store import Store

    store = Store(db, memory_limit=memory_limit)
    memory = Memory(store, log)
    memory.phase = "index"
    state = build_index(store, trace_id)
    found = {"index seconds": state.seconds, "indexed": state.indexed, "frames": state.frames, **memory.report()}
    store.close()
    return found


def serving(db: Path, trace_id: str, before: float, pages: bool, memory_limit: str, log: Path | None) -> dict[str, Any]:
    from starlette.testclient import TestClient

    from devtool.store import Store
    from devtool.store.frame_index_tables import index_state
    from devtool.web.app import create_app
    from devtool.web.settings import Settings

    store = Store(db, memory_limit=memory_limit)
    span = store.query(
        "SELECT span_id FROM spans WHERE trace_id = ? AND kind = 'agent' ORDER BY start_ts LIMIT 1 OFFSET 1000",
        [trace_id],
    )[0][0]
    samples: dict[str, list[tuple[str, float, float]]] = {"append": [], "page": []}
    memory = Memory(store, log)
    with TestClient(create_app(store, Settings(rewind_index_interval=before))) as client:
        began, seq, after = time.perf_counter(), 0, None
        phase = "before"
        while after is None or time.perf_counter() - after < 5:
            if phase != "after":
                state = index_state(store, trace_id)
                keyed = store.query("SELECT 1 FROM keyed_runs WHERE trace_id = ?", [trace_id])
                if state is not None and state.fresh:
                    after, phase = time.perf_counter(), "after"
                elif keyed and phase == "keys":
                    phase = "index"
                elif phase == "before" and time.perf_counter() - began > before + 0.5:
                    phase = "index" if keyed else "keys"
                memory.phase = phase
            batch = []
            for _ in range(25):
                stamp = time.time() * 1000
                for edge in ("start", "end"):
                    seq += 1
                    context = {"traceId": "f" * 32, "spanId": f"{seq // 2:016x}", "parentSpanId": ""}
                    fields = {"agentId": "live", "name": "tick", "trace": context, "_seq": seq}
                    batch.append({"schemaVersion": 1, "type": f"custom:span:{edge}", "timestamp": stamp, **fields})
            response = client.post("/api/v1/traces", json=batch)
            samples["append"].append((phase, server_ms(_lower(response.headers)), time.perf_counter() - began))
            if pages:
                page = client.get(f"/runs/{trace_id}?span={span}")
                samples["page"].append((phase, server_ms(_lower(page.headers)), time.perf_counter() - began))
            time.sleep(0.1)
        state = index_state(store, trace_id)
    found: dict[str, Any] = {
        "index ready at": round(after - began) if after is not None else None,  # s since the server started
        "index seconds": state.seconds if state else None,
        "indexed": bool(state and state.indexed),
        "frames": state.frames if state else 0,
        **memory.report(),
    }
    store.close()
    for name, rows in samples.items():
        for which in PHASES:
            times = sorted(ms for at, ms, _ in rows if at == which)
            if times:
                found[f"{name} {which}"] = {
                    "n": len(times),
                    "p50": statistics.median(times),
                    "p95": times[min(len(times) - 1, int(len(times) * 0.95))],
                    "max": times[-1],
                    # the slowest three, with when each was answered (s since the server started)
                    "slowest": sorted(((round(ms), round(at)) for of, ms, at in rows if of == which), reverse=True)[:3],
                }
    return found


def _lower(headers: Any) -> dict[str, str]:
    return {key.lower(): value for key, value in headers.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("db", type=Path)
    parser.add_argument("trace_id")
    parser.add_argument("--before", type=float, default=10.0, help="seconds served before the indexer starts")
    parser.add_argument("--no-pages", dest="pages", action="store_false", help="live appends only")
    parser.add_argument("--alone", action="store_true", help="build the index with nothing else running")
    parser.add_argument(
        "--memory-limit",
        default=MEMORY_LIMIT,
        help=f"the store's, as `devtool serve --memory-limit` sets it (default {MEMORY_LIMIT}, as the server's)",
    )
    parser.add_argument("--log", type=Path, help="append a JSON line of the memory's peaks so far each minute")
    args = parser.parse_args(argv)
    average = load_average()
    if args.alone:
        found = alone(args.db, args.trace_id, args.memory_limit, args.log)
    else:
        found = serving(args.db, args.trace_id, args.before, args.pages, args.memory_limit, args.log)
    print(json.dumps({**found, "load average": f"{average} → {load_average()}"}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
