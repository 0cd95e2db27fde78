"""Benchmark of `restore_snapshot` on generated traces, against parsing the same file with orjson.

    python bench/bench_restore.py                       # 10k, 100k and 1M events, Markdown table
    python bench/bench_restore.py --sizes 10000 100000  # a quick run while developing

For each size, `bench/gen_trace.py` writes a trace of that many events (one orchestrator agent and
tens of thousands of worker sub-agents, 16 at a time, whose events interleave: turns with a model
call and its budget update, tool batches, a few failures), then in this one process:
- parse: `[orjson.loads(line) for line in file]`, with the cyclic garbage collector paused (the cost
  of parsing itself: the anchor the target is set against) and, once, as a script would run it
  (collector on: a million events make each collection walk millions of objects);
- restore at the latest state (`restore_snapshot(events)`), and at a worker's agent span in the
  middle of the trace, `before` and `after` it.
Each figure is the least CPU time of `--repeat` runs (`--wall`: wall time), each after a
`gc.collect()`. The target (issue 4): a restore takes at most half the time of the parse, with the
same cost per event at 10k and at 1M.
"""

from __future__ import annotations

import argparse
import gc
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

import orjson

from devtool.core.debugger import restore_snapshot

# Run as a script (`python bench/bench_restore.py`) or as a module (`python -m bench.bench_restore`).
try:
    from bench.gen_trace import generate
except ModuleNotFoundError:
    from gen_trace import generate  # type: ignore[no-redef]


def parse(path: Path) -> list[Any]:
    with path.open("rb") as lines:
        return [orjson.loads(line) for line in lines]


def best_of(repeat: int, fn: Callable[[], object]) -> float:
    """The least CPU time of `repeat` runs of `fn`, each after a collection.

    CPU time of this process, not wall time: the machine is shared, and wall time measures what
    else runs on it as much as what this does. (`--wall` measures wall time instead.)
    """
    times = []
    for _ in range(repeat):
        gc.collect()
        _evict_caches()
        started = CLOCK()
        fn()
        times.append(CLOCK() - started)
    return min(times)


CLOCK: Callable[[], float] = time.process_time
_SCRATCH = bytearray(64 * 1024 * 1024)
_FILL = bytes(range(256)) * (len(_SCRATCH) // 256)


def _evict_caches() -> None:
    """Rewrite a buffer twice the CPU's last-level cache (32 MiB here), so that no run starts warm.

    A 10k-event trace (about 40 MB of objects) would otherwise stay partly cached from one repeat to
    the next and restore faster per event than a 1M-event one: a cache effect, not the algorithm's.
    """
    _SCRATCH[:] = _FILL


def parse_paused(path: Path) -> list[Any]:
    gc.disable()
    try:
        return parse(path)
    finally:
        gc.enable()


def middle_worker_span(events: list[Any]) -> str:
    """The agent span of the worker that starts nearest the middle of the trace."""
    middle = len(events) // 2
    for offset in range(len(events)):
        for index in (middle + offset, middle - offset):
            event = events[index]
            if event["type"] == "agent:start" and event["agentId"] == "worker":
                return str(event["trace"]["spanId"])
    raise SystemExit("no worker agent in the trace")


def measure(size: int, directory: Path, repeat: int, seed: int, with_collector: bool) -> dict[str, Any]:
    path = directory / f"trace-{size}.jsonl"
    info = generate(path, events=size, seed=seed)
    figures: dict[str, Any] = {"events": size, "mb": info.bytes / 1e6, "workers": info.workers}
    figures["parse"] = best_of(repeat, lambda: parse_paused(path))
    if with_collector:
        figures["parse_gc"] = best_of(1, lambda: parse(path))
    figures.update(restores(parse_paused(path), repeat))
    if figures["frames"] != info.workers:  # a fast restore that lost frames would prove nothing
        raise SystemExit(f"restored {figures['frames']} worker frames, the trace has {info.workers}")
    path.unlink()
    return figures


def restores(events: list[Any], repeat: int) -> dict[str, Any]:
    span = middle_worker_span(events)
    orchestrator = restore_snapshot(events)["root"]["children"]["root/agent:orchestrator:0"]
    return {
        "frames": len(orchestrator["children"]),
        "latest": best_of(repeat, lambda: restore_snapshot(events)),
        "before": best_of(repeat, lambda: restore_snapshot(events, span_id=span, anchor="before")),
        "after": best_of(repeat, lambda: restore_snapshot(events, span_id=span, anchor="after")),
    }


def report(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| events | file | workers | parse (orjson) | restore latest | ratio | before mid | after mid | "
        "restore per event | parse per event |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        n = row["events"]
        lines.append(
            f"| {n:,} | {row['mb']:,.0f} MB | {row['workers']:,} | {row['parse']:.3f} s | {row['latest']:.3f} s | "
            f"{row['latest'] / row['parse']:.2f}× | {row['before']:.3f} s | {row['after']:.3f} s | "
            f"{row['latest'] / n * 1e6:.2f} µs | {row['parse'] / n * 1e6:.2f} µs |"
        )
    largest = rows[-1]
    if "parse_gc" in largest:
        lines.append("")
        lines.append(
            f"Parsing the {largest['events']:,}-event file with the garbage collector on, as a plain script "
            f"does: {largest['parse_gc']:.1f} s."
        )
    smallest = rows[0]
    per_event = [row["latest"] / row["events"] for row in rows]
    lines.append(
        f"Restore per event, {largest['events']:,} vs {smallest['events']:,} events: "
        f"{per_event[-1] / per_event[0]:.2f}× (parse: "
        f"{(largest['parse'] / largest['events']) / (smallest['parse'] / smallest['events']):.2f}×); "
        f"restore/parse ratio from {min(r['latest'] / r['parse'] for r in rows):.2f}× to "
        f"{max(r['latest'] / r['parse'] for r in rows):.2f}× (median "
        f"{statistics.median(r['latest'] / r['parse'] for r in rows):.2f}×)."
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure; the best is kept (default 3)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--dir", type=Path, default=None, help="where to write the traces (default: a temp dir)")
    parser.add_argument("--wall", action="store_true", help="measure wall time instead of CPU time")
    args = parser.parse_args(argv)
    global CLOCK
    CLOCK = time.perf_counter if args.wall else time.process_time
    rows = []
    with tempfile.TemporaryDirectory(dir=args.dir) as directory:
        for size in sorted(args.sizes):
            # Small traces take milliseconds: more repeats for a stable best (30 at 10k, 9 at 100k).
            repeat = args.repeat * max(1, round((1_000_000 / size) ** 0.5))
            rows.append(measure(size, Path(directory), repeat, args.seed, size == max(args.sizes)))
            print(f"{size:,} events done", file=sys.stderr)
    clock = "wall time" if args.wall else "CPU time"
    print(f"{platform.python_implementation()} {platform.python_version()}, {date.today().isoformat()}, {clock}")
    print(report(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
