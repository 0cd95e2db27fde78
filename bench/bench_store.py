"""Benchmark of the store: loading a large trace, and the queries the timeline and frame tree make.

    python bench/bench_store.py [--events 1000000] [--seed 0] [--repeat 3] [--workdir DIR] [--queries-only]

1. Generates a realistic trace (`bench/gen_trace.py`: one orchestrator, tens of thousands of worker
   agents, turns with messages, tool batches) of `--events` events, or reuses it from `--workdir`.
2. Times, as child processes started from scratch, alternately `--repeat` times each:
   - our whole `devtool load --db NEW FILE` (process start, hash, bulk load, spans, runs, commit);
   - DuckDB reading the same file bare: `CREATE TABLE raw AS SELECT * FROM read_ndjson_objects(path)`
     into a new database file, in a `python -c` process (so both pay a process start).
   The file is read once before, so both find it in the page cache. Reports the best of each, their
   ratio (target ≤ 2×), and the peak memory (max RSS) of our load.
3. On the loaded store: the timeline window of the whole run and of a 1% window in its middle at
   1,600 px, and the frame tree of the run's root (targets ≤ 100 ms each); best, median and worst of 7,
   and the median CPU time of the process (DuckDB's threads with it): what the query costs on a shared
   machine. `--queries-only` asks them of the store a run before left in `--workdir` (an A/B of the
   queries: each checkout's bench on the same store), without loading it again.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.gen_trace import generate
from bench.server import child_env
from devtool.store import store_files

BASELINE = """
import sys, duckdb
conn = duckdb.connect(sys.argv[1])
conn.execute("CREATE TABLE raw AS SELECT * FROM read_ndjson_objects(?)", [sys.argv[2]])
conn.close()
"""


def timed_process(argv: list[str]) -> tuple[float, int, float]:
    """Wall time from spawn to exit, the child's peak RSS in bytes and its CPU time (user + system).

    CPU time says what the work costs even when other processes share the cores; wall time is what
    a user waits. Fails loudly if the child fails.
    """
    began = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=child_env())
    _, status, usage = os.wait4(process.pid, 0)
    took = time.perf_counter() - began
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"{argv[:4]} failed: {process.stderr.read().decode() if process.stderr else ''}")
    return took, usage.ru_maxrss * 1024, usage.ru_utime + usage.ru_stime


def fresh(path: Path) -> Path:
    for candidate in store_files(path):
        candidate.unlink(missing_ok=True)
    return path


def time_call(call: Callable[[], Any], runs: int = 7) -> tuple[float, float, float, float]:
    """Best, median and worst wall time of `call` in ms, and its median CPU time (the process's)."""
    call()  # warm: the first call pays for DuckDB's caches, as the first page view does
    samples, cpu = [], []
    for _ in range(runs):
        began, began_cpu = time.perf_counter(), time.process_time()
        call()
        samples.append((time.perf_counter() - began) * 1000)
        cpu.append((time.process_time() - began_cpu) * 1000)
    return min(samples), statistics.median(samples), max(samples), statistics.median(cpu)


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        memory = int(Path("/proc/meminfo").read_text().split()[1]) / (1 << 20)
    except OSError:
        memory = 0.0
    import duckdb

    return (
        f"{cpu}, {os.cpu_count()} cores, {memory:.0f} GiB, {platform.platform(terse=True)}, "
        f"CPython {platform.python_version()}, DuckDB {duckdb.__version__}"
    )


def ask(db: Path, trace_id: str) -> dict[str, Any]:
    """The timeline and frame-tree queries on the loaded store, timed (`time_call`), and what they drew."""
    from devtool.store import Store
    from devtool.store.queries import frame_tree, get_run, timeline_window

    store = Store(db)
    try:
        run = get_run(store, trace_id)
        middle = run.started_ms + run.duration_ms / 2
        queries = {
            "timeline, whole run, 1,600 px": lambda: timeline_window(store, run.id, width_px=1600),
            "timeline, 1% window, 1,600 px": lambda: timeline_window(
                store, run.id, start_ms=middle, end_ms=middle + run.duration_ms / 100, width_px=1600
            ),
            "frame tree of the root": lambda: frame_tree(store, run.id),
        }
        return {
            "timings": {name: time_call(call) for name, call in queries.items()},
            "load average": os.getloadavg(),
            "whole": timeline_window(store, run.id, width_px=1600),
            "window": queries["timeline, 1% window, 1,600 px"](),
            "events": run.events,
            "spans": store.query("SELECT count(*) FROM spans")[0][0],
        }
    finally:
        store.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workdir", type=Path, default=None, help="keep the trace and databases here")
    parser.add_argument(
        "--queries-only", action="store_true", help="only the queries, on the store an earlier run left in --workdir"
    )
    args = parser.parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="bench-store-"))
    workdir.mkdir(parents=True, exist_ok=True)
    trace = workdir / f"trace-{args.events}-{args.seed}.jsonl"
    info_path = trace.with_suffix(".json")
    ours_db, bare_db = workdir / "ours.duckdb", workdir / "bare.duckdb"
    if args.queries_only and not (ours_db.exists() and info_path.exists()):
        raise SystemExit(f"--queries-only: no store of an earlier run in {workdir}")
    if trace.exists() and info_path.exists():
        info = json.loads(info_path.read_text())
    else:
        print(f"generating {args.events:,} events ...", file=sys.stderr)
        generated = generate(trace, events=args.events, seed=args.seed)
        info = {"trace_id": generated.trace_id, "root": generated.root_span_id, "workers": generated.workers}
        info_path.write_text(json.dumps(info))
    size = trace.stat().st_size
    loads = None if args.queries_only else load_rounds(trace, ours_db, bare_db, args.repeat)
    asked = ask(ours_db, info["trace_id"])

    command = f"python bench/bench_store.py --events {args.events} --seed {args.seed} --repeat {args.repeat}"
    print(f"\n## Store: loading a {args.events:,}-event trace ({size / 1e6:,.0f} MB), and the timeline queries\n")
    print(f"Command: `{command}{' --queries-only' if args.queries_only else ''}`")
    print(f"Machine: {machine()}")
    load_average = asked["load average"] if loads is None else loads["load average"]
    print(
        f"Date: {time.strftime('%Y-%m-%d %H:%M')}; load average (1, 5, 15 min) at the end of the loads "
        f"(else of the queries): {', '.join(f'{x:.1f}' for x in load_average)}\n"
    )
    print(
        f"Trace: {asked['events']:,} events, {asked['spans']:,} spans, {info['workers']:,} worker agents, "
        f"{size / 1e6:,.0f} MB JSONL\n"
    )
    print("| measure | result | target |")
    print("|---|---|---|")
    if loads is not None:
        print_loads(loads, args.repeat, ours_db, bare_db)
    for name, (best, median, worst, cpu) in asked["timings"].items():
        print(
            f"| {name} (best / median / worst of 7; median CPU) | {best:.1f} / {median:.1f} / {worst:.1f} ms; "
            f"{cpu:.1f} ms | ≤ 100 ms |"
        )
    whole, window = asked["whole"], asked["window"]
    print(
        f"| bars drawn: whole run / 1% window | {len(whole.bars):,} ({whole.rows} rows) / "
        f"{len(window.bars):,} ({window.rows} rows) | ≤ rows × 1,600 |"
    )
    return 0


def load_rounds(trace: Path, ours_db: Path, bare_db: Path, repeat: int) -> dict[str, Any]:
    """`repeat` rounds of our load and the bare read, alternately, the file in the page cache for both."""
    with trace.open("rb") as handle:  # into the page cache, for both contenders alike
        while handle.read(1 << 24):
            pass
    ours: list[tuple[float, int, float]] = []
    bare: list[tuple[float, int, float]] = []
    for round_ in range(repeat):
        print(f"round {round_ + 1}/{repeat} ...", file=sys.stderr)
        bare.append(timed_process([sys.executable, "-c", BASELINE, str(fresh(bare_db)), str(trace)]))
        ours.append(timed_process([sys.executable, "-m", "devtool", "load", "--db", str(fresh(ours_db)), str(trace)]))
    return {"ours": ours, "bare": bare, "load average": os.getloadavg()}


def print_loads(loads: dict[str, Any], repeat: int, ours_db: Path, bare_db: Path) -> None:
    ours: list[tuple[float, int, float]] = loads["ours"]
    bare: list[tuple[float, int, float]] = loads["bare"]
    ours_best, bare_best = min(t for t, _, _ in ours), min(t for t, _, _ in bare)
    ours_cpu, bare_cpu = min(c for _, _, c in ours), min(c for _, _, c in bare)
    print(f"| `devtool load` (process start included), best of {repeat} | {ours_best:.2f} s | |")
    print(f"| DuckDB bare `read_ndjson_objects` into a table, best of {repeat} | {bare_best:.2f} s | |")
    print(f"| ratio | {ours_best / bare_best:.2f}× | ≤ 2× |")
    print(
        f"| CPU time (user + system), ours / bare, least of {repeat} | {ours_cpu:.2f} s / {bare_cpu:.2f} s "
        f"({ours_cpu / bare_cpu:.2f}×) | |"
    )
    print(
        f"| all rounds, ours / bare (s) | {', '.join(f'{t:.2f}' for t, _, _ in ours)} / "
        f"{', '.join(f'{t:.2f}' for t, _, _ in bare)} | |"
    )
    print(f"| peak memory of `devtool load` (max RSS) | {max(m for _, m, _ in ours) / 2**20:,.0f} MiB | |")
    print(f"| peak memory of the bare DuckDB load | {max(m for _, m, _ in bare) / 2**20:,.0f} MiB | |")
    sizes = f"{ours_db.stat().st_size / 1e6:,.0f} MB / {bare_db.stat().st_size / 1e6:,.0f} MB"
    print(f"| database size, ours / bare | {sizes} | |")


if __name__ == "__main__":
    sys.exit(main())
