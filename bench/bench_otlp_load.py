"""Benchmark of loading a large OTLP JSON file (the Collector's file exporter's format) with `devtool load`.

    python bench/bench_otlp_load.py [--spans 1000000] [--seed 0] [--repeat 3] [--workdir DIR]

1. Generates a realistic OTLP JSON file (`bench/gen_otlp.py`: agent runs of the three conventions,
   512 spans a line) of `--spans` spans, or reuses it from `--workdir`.
2. Times, as child processes started from scratch, alternately `--repeat` times each:
   - our whole `devtool load --db NEW FILE` (process start, hash, the SQL mapping of every span to
     its two TraceEvents, spans, runs, commit);
   - DuckDB reading the same file bare: `CREATE TABLE raw AS SELECT * FROM read_ndjson_objects(path)`
     into a new database file (the baseline of `bench_store.py`: the lines, not their spans);
   - DuckDB reading the spans out of it: `from_json` of each line with the OTLP structure and the
     spans unnested into a table: what any reader of OTLP in DuckDB does before mapping anything;
   - `devtool load` of the same events as a TraceEvent JSONL file (the native load): the events the
     first OTLP load stored, written out once, line for line as stored (`native-*.jsonl`).
   Reports the best of each, the ratios (issue 43's target: ≤ 3× the native load; issue 16's was
   ≤ 2× the bare read), CPU times and peak memory.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import duckdb

from bench.bench_store import BASELINE, fresh, machine, timed_process
from bench.gen_otlp import generate
from devtool.store.otlp_sql import REQUEST

SPANS = f"""
import sys, duckdb
conn = duckdb.connect(sys.argv[1])
conn.execute('''CREATE TABLE spans AS SELECT unnest(ss.spans) AS span FROM (
    SELECT unnest(rs.scopeSpans) AS ss FROM (SELECT unnest(req.resourceSpans) AS rs FROM (
        SELECT from_json(json, '{REQUEST}') AS req FROM read_ndjson_objects(?))))''', [sys.argv[2]])
conn.close()
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spans", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workdir", type=Path, default=None, help="keep the file and databases here")
    args = parser.parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="bench-otlp-load-"))
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / f"spans-{args.spans}-{args.seed}.otlp.jsonl"
    if not path.exists():
        print(f"generating {args.spans:,} spans ...", file=sys.stderr)
        generate(path, spans=args.spans, seed=args.seed)
    size = path.stat().st_size
    with path.open("rb") as handle:  # into the page cache, for every contender alike
        while handle.read(1 << 24):
            pass
    ours_db, bare_db, spans_db = workdir / "ours.duckdb", workdir / "bare.duckdb", workdir / "spans.duckdb"
    native, native_db = workdir / f"native-{args.spans}-{args.seed}.jsonl", workdir / "native.duckdb"
    runs: dict[str, list[tuple[float, int, float]]] = {"ours": [], "bare": [], "spans": [], "native": []}
    for round_ in range(args.repeat):
        print(f"round {round_ + 1}/{args.repeat} ...", file=sys.stderr)
        runs["bare"].append(timed_process([sys.executable, "-c", BASELINE, str(fresh(bare_db)), str(path)]))
        runs["spans"].append(timed_process([sys.executable, "-c", SPANS, str(fresh(spans_db)), str(path)]))
        load = [sys.executable, "-m", "devtool", "load", "--db", str(fresh(ours_db)), str(path)]
        runs["ours"].append(timed_process(load))
        if not native.exists():
            write_native(ours_db, native)
        load = [sys.executable, "-m", "devtool", "load", "--db", str(fresh(native_db)), str(native)]
        runs["native"].append(timed_process(load))
    load_average = os.getloadavg()
    best = {name: min(t for t, _, _ in samples) for name, samples in runs.items()}
    cpu = {name: min(c for _, _, c in samples) for name, samples in runs.items()}
    memory = {name: max(m for _, m, _ in samples) / 2**20 for name, samples in runs.items()}

    print(f"\n## Loading a {args.spans:,}-span OTLP JSON file ({size / 1e6:,.0f} MB)\n")
    print(f"Command: `python bench/bench_otlp_load.py --spans {args.spans} --seed {args.seed} --repeat {args.repeat}`")
    print(f"Machine: {machine()}")
    print(
        f"Date: {time.strftime('%Y-%m-%d')}; load average (1, 5, 15 min) at the end: "
        f"{', '.join(f'{x:.1f}' for x in load_average)}\n"
    )
    print(f"| measure | wall, best of {args.repeat} | CPU (user + system) | peak memory |")
    print("|---|---|---|---|")
    labels = {
        "ours": "`devtool load` (2 events a span, spans, runs)",
        "bare": "DuckDB bare `read_ndjson_objects` into a table",
        "spans": "DuckDB `from_json` of each line, spans unnested into a table",
        "native": "`devtool load` of the same events as TraceEvent JSONL (the native load)",
    }
    for name, label in labels.items():
        print(f"| {label} | {best[name]:.2f} s | {cpu[name]:.2f} s | {memory[name]:,.0f} MiB |")
    ratios = (
        ("native", "the native load (target ≤ 3×, issue 43)"),
        ("bare", "the bare read (issue 16: ≤ 2×)"),
        ("spans", "reading the spans"),
    )
    for other, what in ratios:
        print(f"| ratio to {what} | {best['ours'] / best[other]:.2f}× | {cpu['ours'] / cpu[other]:.2f}× | |")
    rounds = " / ".join(", ".join(f"{t:.2f}" for t, _, _ in runs[name]) for name in labels)
    print(f"| all rounds (s), ours / bare / spans / native | {rounds} | | |")
    return 0


def write_native(db: Path, out: Path) -> None:
    """The events of the store `db` as a TraceEvent JSONL file: each stored text a line, in id order."""
    conn = duckdb.connect(str(db), read_only=True)
    try:
        cursor = conn.execute("SELECT body FROM events ORDER BY event_id")
        with out.open("w", encoding="utf-8") as handle:
            while rows := cursor.fetchmany(10_000):
                handle.writelines(f"{body}\n" for (body,) in rows)
    finally:
        conn.close()


if __name__ == "__main__":
    sys.exit(main())
