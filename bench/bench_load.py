"""One trace file's load, one checkout's code against another's, beside DuckDB's bare read of the file.

    python bench/bench_load.py TRACE [--tree DIR ...] [--repeat 3] [--workdir DIR]
    python bench/bench_load.py TRACE --parts [--tree DIR ...] [--workdir DIR]   # where one load's time goes

Each round runs, as child processes started from scratch and one after the other: DuckDB's bare
read of the file (`bench_store.BASELINE`), then for each tree (a checkout of the DevTool: `.` and,
say, a worktree of main; the trees take turns going first, round by round) `devtool load` of the
file into a new database, and the same load with the search index left out
(`bench_scale.WITHOUT_INDEX`): the index's cost is the difference. A child runs a tree's code by
starting in it. Every figure is wall time (what a user waits), CPU time (user + system of all
threads: what the work costs whatever else runs on the machine) and peak memory (max RSS), with the
load average beside each round; ratios are to the bare read of the same round.

`--parts` loads the file once in this process, through the same loader `devtool load` uses, on a
connection that times each statement (wall, and CPU of the process: every statement runs alone, so
its CPU is its own), with what `load_file` does beside the loader: the file's SHA-256 on a thread of
its own meanwhile, and the big run's span keys. It prints the steps (insert, spans, run summaries,
search index, span keys, commit) and the costliest statements.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# After PYTHONPATH: a child started for another checkout (`--parts --tree`) imports that one's devtool.
sys.path.append(str(Path(__file__).resolve().parent.parent))

from bench.bench_scale import WITHOUT_INDEX, load_average
from bench.bench_store import BASELINE, fresh, machine

Run = tuple[float, float, int]  # wall s, CPU s, max RSS bytes


def spawn(argv: list[str], tree: Path | None = None) -> Run:
    """Wall time, CPU time and peak RSS of a child started in `tree` (its code first on the path)."""
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    began = time.perf_counter()
    process = subprocess.Popen(argv, cwd=tree, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    took = time.perf_counter() - began
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{argv[:4]} in {tree} failed: {process.stderr.read().decode() if process.stderr else ''}")
    return took, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024


def compare(trace: Path, trees: list[Path], repeat: int, workdir: Path) -> None:
    with trace.open("rb") as handle:  # into the page cache, for every contender alike
        while handle.read(1 << 24):
            pass
    db = workdir / "load.duckdb"
    runs: dict[str, list[Run]] = {"bare": []}
    averages = []
    for round_ in range(repeat):
        averages.append(load_average())
        print(f"round {round_ + 1}/{repeat}, load average {averages[-1]}", file=sys.stderr)
        runs["bare"].append(spawn([sys.executable, "-c", BASELINE, str(fresh(db)), str(trace)]))
        # The trees take turns going first: whichever loaded first in a round took 4-5 s more for the
        # same insert at 10M (BENCHMARKS, issue 21), more than the changes compared.
        turn = round_ % len(trees)
        for tree in trees[turn:] + trees[:turn]:
            for name, command in (("load", ["-m", "devtool", "load"]), ("without index", ["-c", WITHOUT_INDEX])):
                found = spawn([sys.executable, *command, "--db", str(fresh(db)), str(trace)], tree)
                runs.setdefault(f"{tree.name} {name}", []).append(found)
                print(f"  {tree.name} {name}: {found[0]:.1f} s, {found[1]:.1f} s CPU", file=sys.stderr)
        averages[-1] += f" → {load_average()}"
    fresh(db)
    print(f"\n{trace.name}, {trace.stat().st_size / 1e9:.2f} GB; {machine()}; {time.strftime('%Y-%m-%d %H:%M')}")
    print(f"load averages by round: {'; '.join(averages)}\n")
    print("| | wall, median (best) | CPU, median | peak memory | wall ÷ bare | CPU ÷ bare |")
    print("|---|---|---|---|---|---|")
    bare = runs["bare"]
    for name, rows in runs.items():
        walls, cpus = [row[0] for row in rows], [row[1] for row in rows]
        wall_ratio = statistics.median(row[0] / base[0] for row, base in zip(rows, bare, strict=True))
        cpu_ratio = statistics.median(row[1] / base[1] for row, base in zip(rows, bare, strict=True))
        print(
            f"| {name} | {statistics.median(walls):.1f} s ({min(walls):.1f}) | {statistics.median(cpus):.1f} s | "
            f"{max(row[2] for row in rows) / 2**30:.2f} GiB | {wall_ratio:.2f}× | {cpu_ratio:.2f}× |"
        )
    for tree in trees:
        ours, plain = runs[f"{tree.name} load"], runs[f"{tree.name} without index"]
        wall = statistics.median((o[0] - p[0]) / o[0] for o, p in zip(ours, plain, strict=True))
        cpu = statistics.median((o[1] - p[1]) / o[1] for o, p in zip(ours, plain, strict=True))
        print(f"\n{tree.name}: the search index's share of the load (median): {wall:.0%} of wall, {cpu:.0%} of CPU")


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class _Timed:
    """A connection that records each statement's wall and CPU time (of the whole process)."""

    def __init__(self, conn: Any, log: list[tuple[str, float, float]]) -> None:
        self._conn, self._log = conn, log

    def execute(self, sql: str, params: Any = None) -> Any:
        wall, cpu = time.perf_counter(), _cpu()
        result = self._conn.execute(sql, params) if params is not None else self._conn.execute(sql)
        self._log.append((" ".join(sql.split()), time.perf_counter() - wall, _cpu() - cpu))
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def _step(sql: str) -> str:
    if sql.startswith("CREATE OR REPLACE TEMP MACRO"):
        return "macros"
    if sql.startswith(("INSERT INTO events", "SET preserve", "RESET preserve", "SELECT coalesce(max(event_id)")):
        return "insert events"
    if sql.startswith(("INSERT INTO runs", "DELETE FROM runs")):
        return "run summaries"
    if any(table in sql for table in ("search_terms", "search_blocks", "new_words")) or sql.startswith("COPY"):
        return "search index"
    if "keyed_now" in sql or "keyed_runs" in sql:
        return "span keys"
    if sql == "COMMIT":
        return "commit"
    if "print_runs" in sql or "_prints" in sql or "print_buckets" in sql:
        return "call fingerprints"
    return "spans (derive)"


def parts(trace: Path, workdir: Path) -> None:
    from devtool.store import Store, span_keys_build
    from devtool.store.files import SourceFile
    from devtool.store.load import DEFAULT_OBJECT_SIZE
    from devtool.store.loaders import Reading, detect

    db = fresh(workdir / "parts.duckdb")
    store = Store(db)
    with SourceFile(trace) as source:
        loader = detect(source)  # as `load_file` does: a TraceEvent JSONL file, an OTLP JSON file ...
    reading = Reading(False, DEFAULT_OBJECT_SIZE)
    log: list[tuple[str, float, float]] = []
    average = load_average()
    began, cpu = time.perf_counter(), _cpu()
    with SourceFile(trace) as source, store.transaction() as conn:
        source.start_digest()  # as `load_file` does: it takes a core from the insert
        timed = _Timed(conn, log)
        inserted = loader.insert(timed, str(trace), 1, reading)  # type: ignore[arg-type]
        bodies = getattr(loader, "bodies", None)  # main before issue 21's load: the index read the file again
        if bodies is not None:
            from devtool.store import search

            terms = workdir / "terms.parquet"
            with store.reader() as cursor:
                copy = f"COPY ({search.terms_sql(bodies(reading))}) TO '{terms}'"
                _Timed(cursor, log).execute(copy, {"path": str(trace)})
            timed.execute("INSERT INTO search_terms SELECT * FROM read_parquet($terms)", {"terms": str(terms)})
            terms.unlink()
        span_keys_build.key_runs(timed, inserted.traces, min_events=span_keys_build.LOAD_KEYED_EVENTS)  # type: ignore[arg-type]
        waited = time.perf_counter()
        source.wait_digest()
        waited = time.perf_counter() - waited
        commit_wall, commit_cpu = time.perf_counter(), _cpu()
    log.append(("COMMIT", time.perf_counter() - commit_wall, _cpu() - commit_cpu))
    total_wall, total_cpu = time.perf_counter() - began, _cpu() - cpu
    store.close()
    fresh(db)
    steps: dict[str, list[float]] = {}
    for sql, wall, spent in log:
        step = steps.setdefault(_step(sql), [0.0, 0.0])
        step[0] += wall
        step[1] += spent
    print(f"\n{trace.name}: one load, step by step; load average {average} → {load_average()}; {machine()}\n")
    print("| step | wall | CPU | share of CPU |")
    print("|---|---|---|---|")
    for name, (wall, spent) in steps.items():
        print(f"| {name} | {wall:.1f} s | {spent:.1f} s | {spent / total_cpu:.0%} |")
    print(f"| whole | {total_wall:.1f} s | {total_cpu:.1f} s | peak RSS {_peak() / 2**30:.2f} GiB |")
    print(f"\nThe file's digest (beside the statements, in the CPU above) was waited for {waited:.1f} s at the end.")
    statements: dict[str, list[float]] = {}
    for sql, wall, spent in log:
        row = statements.setdefault(sql[:70], [0, 0.0, 0.0])
        row[0] += 1
        row[1] += wall
        row[2] += spent
    print("\n| statement | times | wall | CPU |")
    print("|---|---|---|---|")
    for sql, (times, wall, spent) in sorted(statements.items(), key=lambda item: -item[1][2])[:14]:
        print(f"| `{sql}` | {times:.0f} | {wall:.1f} s | {spent:.1f} s |")


def _peak() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace", type=Path)
    parser.add_argument("--tree", type=Path, nargs="+", default=[Path(".")], help="checkouts to compare")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workdir", type=Path, default=None, help="where the databases are written")
    parser.add_argument("--parts", action="store_true", help="one load in this process, step by step")
    args = parser.parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="bench-load-"))
    workdir.mkdir(parents=True, exist_ok=True)
    trace = args.trace.resolve()
    if args.parts and args.tree != [Path(".")]:
        for tree in args.tree:  # each in a child that imports that checkout's devtool
            env = {**os.environ, "PYTHONPATH": str(tree.resolve())}
            command = [sys.executable, str(Path(__file__).resolve()), str(trace), "--parts", "--workdir", str(workdir)]
            subprocess.run(command, cwd=tree, env=env, check=True)
    elif args.parts:
        parts(trace, workdir.resolve())
    else:
        compare(trace, [tree.resolve() for tree in args.tree], args.repeat, workdir.resolve())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
