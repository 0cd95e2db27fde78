"""The runs list's search on a kept store, page by page over HTTP, for one checkout or an A/B of several.

    python bench/bench_runs_search.py DB --words quokkaberry [--tree DIR ...] [--rounds 4] [--walks 5]

For each tree (a checkout of the DevTool, this one by default), a real `devtool serve` of that tree's
code on a copy of DB and its rewind file (one DuckDB file is one process's), started and left to go
idle (its CPU still for a second) before the first ask. Each round, the trees in turn (the order
reversed every other round: A B, B A, ...): `--walks` walks of every page of `/?q=WORD`, the results
fragment the search box swaps in (`HX-Request`), as `bench/peers`' search walks them, after one walk
to warm up. Reports for each tree and word: each page's median server time (`Server-Timing`), the
walk's median wall time, the server's CPU a walk (its process tree's, from /proc), the runs found, and
the load average at each round. The servers take turns, so each walk's CPU is its own.

A store to ask: `python -m bench.peers --systems ours --figures ingest search --rounds 1 --scratch S`
leaves its 100,000-span store in `S/runs/ours/bench.duckdb` (a round removes it at its start, not its
end); `bench_store.py --workdir W` leaves a million-event one in `W/ours.duckdb`.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
import zlib
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_live import cpu_seconds
from bench.server import ROOT
from devtool.store import store_files

ROW = re.compile(r'<tr class="run-row[^"]*"[^>]*data-run-id="([0-9a-f]+)"')
HIT = re.compile(r'<a class="run-hit" .*?</a>', re.S)  # a snippet: its link, field and text
IDLE_CPU = 0.05  # s of CPU in a second below which a started server counts as idle


@dataclass
class Served:
    """One tree's server on its own copy of the store, and what its walks measured."""

    tree: Path
    process: subprocess.Popen[str]
    url: str
    pages: dict[str, list[list[float]]] = field(default_factory=dict)  # word -> each walk's page times
    walls: dict[str, list[float]] = field(default_factory=dict)
    cpus: dict[str, list[float]] = field(default_factory=dict)
    found: dict[str, tuple[int, int, int]] = field(default_factory=dict)  # runs, snippets, the snippets' CRC


def start(tree: Path, db: Path, scratch: Path) -> Served:
    copy = scratch / tree.resolve().name / db.name
    copy.parent.mkdir(parents=True, exist_ok=True)
    for source, target in zip(store_files(db), store_files(copy), strict=True):
        if source.exists():
            shutil.copyfile(source, target)
    env = {**os.environ, "PYTHONPATH": str(tree.resolve()), "PYTHONSAFEPATH": "1"}
    command = [sys.executable, "-m", "devtool", "serve", "--port", "0", "--db", str(copy)]
    process = subprocess.Popen(command, cwd=tree, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert process.stdout is not None
    first = process.stdout.readline()
    if not first.startswith("DevTool at "):
        process.kill()
        raise SystemExit(f"devtool serve in {tree} did not start: {first}")
    served = Served(tree, process, first.removeprefix("DevTool at ").strip().rstrip("/"))
    settle(served)
    return served


def settle(served: Served, timeout: float = 600) -> None:
    """Wait until the server's CPU stays under `IDLE_CPU` for a second (its start's background work done)."""
    began = time.perf_counter()
    last = cpu_seconds(served.process.pid)
    while time.perf_counter() - began < timeout:
        time.sleep(1)
        now = cpu_seconds(served.process.pid)
        if now - last < IDLE_CPU:
            return
        last = now
    raise SystemExit(f"the server of {served.tree} did not go idle in {timeout:.0f} s")


def page(url: str) -> tuple[float, str]:
    request = urllib.request.Request(url, headers={"HX-Request": "true"})
    with urllib.request.urlopen(request, timeout=600) as response:
        timing = response.headers.get("Server-Timing", "")
        body = response.read().decode()
    found = re.search(r"app;dur=([0-9.]+)", timing)
    if found is None:
        raise SystemExit(f"{url}: no Server-Timing")
    return float(found.group(1)), body


def walk(served: Served, word: str) -> tuple[list[float], float, float, tuple[int, int, int]]:
    """Every page of the search: each page's server time, the walk's wall and server CPU, what it found."""
    cpu, began = cpu_seconds(served.process.pid), time.perf_counter()
    times, runs, links = [], 0, []
    number, more = 1, True
    while more:
        took, body = page(f"{served.url}/?q={urllib.parse.quote(word)}&page={number}")
        times.append(took)
        runs += len(ROW.findall(body))
        links.extend(HIT.findall(body))
        more = "Older →" in body
        number += 1
    wall, used = time.perf_counter() - began, cpu_seconds(served.process.pid) - cpu
    return times, wall * 1000, used * 1000, (runs, len(links), zlib.crc32("\n".join(links).encode()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db", type=Path, help="the store to ask (copied for each tree)")
    parser.add_argument("--words", nargs="+", default=["quokkaberry"], help="what to search for")
    parser.add_argument(
        "--tree", type=Path, action="append", help="a checkout to serve (repeatable; default: this one)"
    )
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--walks", type=int, default=5, help="walks of each word's pages a tree a round")
    args = parser.parse_args()
    trees: list[Path] = args.tree or [ROOT]
    scratch = Path(tempfile.mkdtemp(prefix="bench-runs-search-"))
    servers: list[Served] = []
    try:
        for tree in trees:
            servers.append(start(tree, args.db, scratch))
        for number in range(args.rounds):
            order = servers if number % 2 == 0 else servers[::-1]
            print(f"round {number + 1}: {' → '.join(s.tree.name for s in order)}; load {_load()}", flush=True)
            for served in order:
                for word in args.words:
                    walk(served, word)  # warms DuckDB's caches, as the first search after a start does
                    for _ in range(args.walks):
                        times, wall, used, found = walk(served, word)
                        served.pages.setdefault(word, []).append(times)
                        served.walls.setdefault(word, []).append(wall)
                        served.cpus.setdefault(word, []).append(used)
                        served.found[word] = found
                    walls = served.walls[word][-args.walks :]
                    print(f"  {served.tree.name} {word}: walk {statistics.median(walls):.1f} ms", flush=True)
        print(f"load at the end {_load()}")
        print(
            "| tree | word | each page, median server time (ms) | a walk, median wall (ms) "
            "| server CPU a walk (ms) | runs, snippets (their CRC) |"
        )
        print("|---|---|---|---|---|---|")
        for served in servers:
            for word in args.words:
                walks = served.pages[word]
                per_page = [statistics.median(times[i] for times in walks) for i in range(len(walks[0]))]
                runs, snippets, crc = served.found[word]
                print(
                    f"| {served.tree.name} | {word} | {' / '.join(f'{t:.1f}' for t in per_page)} "
                    f"| {statistics.median(served.walls[word]):.1f} | {statistics.median(served.cpus[word]):.0f} "
                    f"| {runs}, {snippets} ({crc:08x}) |"
                )
    finally:
        for served in servers:
            served.process.terminate()
            served.process.wait(timeout=60)
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


def _load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


if __name__ == "__main__":
    sys.exit(main())
