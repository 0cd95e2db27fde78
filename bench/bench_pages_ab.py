"""The run page of several checkouts, served at once and asked in turn: an A/B the machine's drift cannot bias.

    python bench/bench_pages_ab.py TREE [TREE ...] [--events 1000000] [--rounds 30] [--workdir DIR]

On this shared host the same request's server time moves by a third over minutes (BENCHMARKS.md, the
eleventh session: a run page read 40% slower on one checkout than another in runs minutes apart, and
the same on both asked in turn). So each TREE (a checkout: a `git archive` copy, or this one, `.`)
serves the same trace at the same time, with its own code (`bench/server.py`'s `serve`, `root=TREE`),
and each is left until its start's background work is done (the rewind index: its CPU idle for
`SETTLED` seconds). Then the run page's first paint, a click on a span (its tree and detail) and a
link with that span selected are asked of each in turn, `--rounds` times, the order of the trees
reversed every round. Prints each tree's median and 90th percentile of the server's own time
(`Server-Timing`) for each request, and the load average.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_live import cpu_seconds
from bench.bench_run_page import trace_in
from bench.server import get, serve

SETTLED = 6.0  # seconds of a server's CPU under IDLE_CPU a second: its background work is done
IDLE_CPU = 0.05


def settle(pid: int) -> None:
    """Wait until the process and its children (the rewind index's walk) have been idle for `SETTLED` s."""
    idle, last = 0.0, cpu_seconds(pid)
    while idle < SETTLED:
        time.sleep(1.0)
        now = cpu_seconds(pid)
        idle = idle + 1.0 if now - last < IDLE_CPU else 0.0
        last = now


def requests_of(url: str, trace_id: str) -> list[tuple[str, str, bool]]:
    """The requests asked of one server: (name, URL, asked by htmx)."""
    run = f"{url}runs/{trace_id}"
    spans = re.findall(r'data-span="([0-9a-f]{16})"', get(run)[1].decode())
    middle = spans[len(spans) // 2]
    return [
        ("first paint", run, False),
        ("a click on a span", f"{run}/select?span={middle}", True),
        ("a link with a span selected", f"{run}?span={middle}", True),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trees", type=Path, nargs="+", help="checkouts to serve side by side")
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--workdir", type=Path, default=None, help="where the trace is made once and kept")
    args = parser.parse_args()
    trees: list[Path] = [tree.resolve() for tree in args.trees]
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="devtool-bench-pages-ab-"))
    workdir.mkdir(parents=True, exist_ok=True)
    trace = trace_in(workdir, args.events)
    with tempfile.TemporaryDirectory(prefix="devtool-bench-pages-ab-") as folder:
        servers: list[subprocess.Popen[str]] = []
        try:
            asked = []
            for number, tree in enumerate(trees):
                process, url, took = serve(Path(folder) / f"{number}.duckdb", [trace.path], root=tree)
                servers.append(process)
                settle(process.pid)
                print(f"{tree}: served in {took:.1f} s, settled", flush=True)
                asked.append(requests_of(url, trace.trace_id))
            times: list[dict[str, list[float]]] = [{} for _ in trees]
            for round_ in range(args.rounds):
                order = range(len(trees)) if round_ % 2 == 0 else range(len(trees) - 1, -1, -1)
                for step in range(len(asked[0])):
                    for number in order:
                        name, url, htmx = asked[number][step]
                        times[number].setdefault(name, []).append(get(url, htmx=htmx)[0])
        finally:
            for process in servers:
                process.terminate()
                process.wait(timeout=30)
    print(f"\n{args.events:,} events, {args.rounds} rounds; load average {os.getloadavg()[0]:.2f} at the end")
    print("| tree | " + " | ".join(f"{name}, median (p90)" for name, _, _ in asked[0]) + " |")
    print("|---" * (len(asked[0]) + 1) + "|")
    for tree, found in zip(trees, times, strict=True):
        cells = [f"{statistics.median(ms):.0f} ms ({statistics.quantiles(ms, n=10)[-1]:.0f})" for ms in found.values()]
        print(f"| {tree} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
