"""The lake: publish throughput, and a million-event run opened from the lake against the same run local.

    python bench/bench_lake.py [--events 1000000] [--small-runs 200] [--repeat 5] [--workdir DIR]

A throw-away PostgreSQL cluster (`testkit/postgres.py`) holds the catalog, a folder under the workdir
the data. The trace is `bench/gen_trace.py`'s (seed 7), generated once into `--workdir` and reused.

1. Publish throughput, in-process: the big run (loaded into a store from its file, then published in
   one transaction), and `--small-runs` runs of 122 events each (appended live, then published as the
   server's lake worker does, 20 runs a transaction); events per second of wall time, each round on a
   fresh lake.
2. Opening the big run: a real `devtool serve` that loaded the file (local), and one attached to the
   lake with an empty database (lake). The lake server's first request for the run copies its head and
   answers; a link to a turn in the middle of the run (far past the head) copies that span and its
   ancestors and answers, while the rest is copied in the background: those two, in wall time, are the
   wait of the first teammate who opens it, each beside the local server's same request. Then how long
   the rest took, and, in interleaved rounds (local, lake, local, lake, ...), each server's first paint
   of the run page and that link, in the server's own time (`Server-Timing`). The load average is printed
   with each figure.
"""

from __future__ import annotations

import argparse
import datetime as dt
import html
import os
import platform
import re
import shutil
import statistics
import sys
import tempfile
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_run_page import trace_in
from bench.server import get, serve
from devtool.store import Store, append_events, load_file
from devtool.store.lake import attach_lake, lake_config, publish_runs
from testkit.lake_runs import run_events, trace_id_of
from testkit.postgres import Cluster, cluster

SMALL_SPANS = 60
BATCH = 20


def load_average() -> str:
    return "/".join(f"{value:.1f}" for value in os.getloadavg())


def publish_big(made: Cluster, workdir: Path, trace: Path, trace_id: str, round_no: int) -> tuple[int, float]:
    folder = workdir / f"publish-big-{round_no}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    store = Store(folder / "p.duckdb")
    try:
        load_file(store, trace)
        lake = attach_lake(store, lake_config(made.createdb(f"big{round_no}"), str(folder / "data"), "bench"))
        began = time.perf_counter()
        (done,) = publish_runs(store, lake, [trace_id])
        return done.events, time.perf_counter() - began
    finally:
        store.close()
        shutil.rmtree(folder, ignore_errors=True)


def publish_small(made: Cluster, workdir: Path, runs: int, round_no: int) -> tuple[int, float]:
    folder = workdir / f"publish-small-{round_no}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    store = Store(folder / "p.duckdb")
    try:
        names = [f"small {round_no} {n}" for n in range(runs)]
        for name in names:
            append_events(store, run_events(name, SMALL_SPANS))
        lake = attach_lake(store, lake_config(made.createdb(f"small{round_no}"), str(folder / "data"), "bench"))
        traces = [trace_id_of(name) for name in names]
        began = time.perf_counter()
        events = 0
        for at in range(0, len(traces), BATCH):
            events += sum(done.events for done in publish_runs(store, lake, traces[at : at + BATCH]))
        return events, time.perf_counter() - began
    finally:
        store.close()
        shutil.rmtree(folder, ignore_errors=True)


def turn_in_the_middle(trace: Path) -> str:
    """The span id of the first turn after the middle of the trace file: far past any head."""
    with trace.open("rb") as handle:
        handle.seek(trace.stat().st_size // 2)
        handle.readline()
        for line in handle:
            if b'"type":"turn:start"' in line:
                found = re.search(rb'"spanId":"([0-9a-f]{16})"', line)
                if found:
                    return found.group(1).decode()
    raise SystemExit(f"{trace}: no turn in its second half")


def wall(url: str) -> tuple[float, str]:
    """The wall time of a GET in ms, and the `Lake-Copied` it said (`all`: none, the run is whole here;
    an error's status and the first line of its message instead, for the table)."""
    began = time.perf_counter()
    try:
        with urllib.request.urlopen(url, timeout=3600) as response:
            response.read()
            copied = response.headers.get("Lake-Copied") or "all"
    except urllib.error.HTTPError as error:
        page = error.read().decode(errors="replace")
        said = re.search(r'class="error-detail">([^<]*)<', page)
        copied = f"{error.code}: {html.unescape(said.group(1)) if said else page.strip()[:200]}"
    return (time.perf_counter() - began) * 1000, copied


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--small-runs", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--publish-rounds", type=int, default=2)
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="devtool-bench-lake-"))
    workdir.mkdir(parents=True, exist_ok=True)
    trace = trace_in(workdir, args.events)
    print(f"# bench_lake · {platform.node()} · {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC · {args.events:,} events")
    with cluster() as made:
        print("\n| publish | events | seconds | events/s | load |")
        print("|---|---|---|---|---|")
        for round_no in range(args.publish_rounds):
            events, took = publish_big(made, workdir, trace.path, trace.trace_id, round_no)
            rate = f"{events / took:,.0f}"
            print(f"| one run of {events:,} events | {events:,} | {took:.2f} | {rate} | {load_average()} |")
            events, took = publish_small(made, workdir, args.small_runs, round_no)
            print(
                f"| {args.small_runs} runs of {2 * SMALL_SPANS + 2} events, {BATCH} a transaction | {events:,} "
                f"| {took:.2f} | {events / took:,.0f} | {load_average()} |",
                flush=True,
            )
        open_from_lake(made, workdir, trace.path, trace.trace_id, args.repeat)


def open_from_lake(made: Cluster, workdir: Path, trace: Path, trace_id: str, repeat: int) -> None:
    folder = workdir / "open"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    catalog, data = made.createdb("opened"), str(folder / "data")
    lake_options = ("--lake", catalog, "--lake-data", data, "--lake-compact-every", "0")
    # The publisher (loads the file and publishes the run, then stops) and the local server load the
    # file at once, each in a thread of this process waiting for its server to say it is up.
    with ThreadPoolExecutor(2) as pool:
        starting = pool.submit(serve, folder / "publisher.duckdb", [trace], *lake_options, "--lake-name", "publisher")
        local, local_url, _ = serve(folder / "local.duckdb", [trace])
        publisher = starting.result()[0]
    lake, lake_url, _ = serve(folder / "lake.duckdb", [], *lake_options, "--lake-name", "reader")
    try:
        deadline = time.monotonic() + 1800
        while trace_id.encode() not in get(lake_url)[1]:  # the reader lists it: published
            if time.monotonic() > deadline:
                raise SystemExit("the run never reached the lake")
            time.sleep(1)
        publisher.terminate()
        publisher.wait()
        middle = turn_in_the_middle(trace)
        asks = {
            "first paint": f"runs/{trace_id}",
            "a link to a turn in the middle of the run": f"runs/{trace_id}?span={middle}",
        }
        # The first teammate's wait: the page of a run the lake server does not hold (its head copied
        # first), then a link to a span its head does not hold, while the rest is copied; each beside the
        # local server's same request just before (wall time, as the teammate waits it).
        print("\n| first open | local | lake (cold) | lake / local | events here when it answered | load |")
        print("|---|---|---|---|---|---|")
        for name, path in asks.items():
            here, _ = wall(local_url + path)
            there, copied = wall(lake_url + path)
            ratio = there / here
            print(
                f"| {name} | {here:.0f} ms | {there:.0f} ms | {ratio:.2f}× | {copied} | {load_average()} |", flush=True
            )
        began = time.perf_counter()
        deadline = time.monotonic() + 3600
        while wall(lake_url + asks["first paint"])[1] != "all":
            if time.monotonic() > deadline:
                raise SystemExit("the rest of the run was never copied")
            time.sleep(1)
        took = time.perf_counter() - began
        print(f"\nthe rest copied in the background: whole within {took:.1f} s more (load {load_average()})")
        times: dict[tuple[str, str], list[float]] = {}
        loads = []
        for _ in range(repeat):
            for where, url in (("local", local_url), ("lake", lake_url)):
                for name, path in asks.items():
                    took, _ = get(url + path)
                    times.setdefault((name, where), []).append(took)
            loads.append(load_average())
        print("\n| request | local, median | lake, median | lake / local | load over the rounds |")
        print("|---|---|---|---|---|")
        for name in asks:
            here, there = statistics.median(times[(name, "local")]), statistics.median(times[(name, "lake")])
            print(f"| {name} | {here:.0f} ms | {there:.0f} ms | {there / here:.2f}× | {loads[0]} … {loads[-1]} |")
    finally:
        for process in (publisher, local, lake):
            if process.poll() is None:
                process.terminate()
                process.wait()


if __name__ == "__main__":
    main()
