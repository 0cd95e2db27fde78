"""Benchmark of the runs page and the process page over a million-event run and a large journal.

    python bench/bench_runs_process.py [--events 1000000] [--entries 200000] [--repeat 5] [--workdir DIR]

1. Generates a trace of `--events` events (`bench/gen_trace.py`, seed 7) and a process journal of
   `--entries` entries spread over the run's time, whose one invocation started that run (its
   `invocation_start` and `invocation_result` carry the run's trace id) and whose triggers, context
   updates, conversation and tool calls fall inside it. Reuses both from `--workdir`.
2. Starts a real `devtool serve --db NEW TRACE JOURNAL` (which loads both first) and asks it, over
   HTTP, for each page `--repeat` times: the runs page (all, a text search that scans every event,
   a status filter) and the process page (whole, an entry in the middle selected, the invocation
   opened into the million-event run, both). Reports the server's own time (`Server-Timing`, median
   and worst), the size of the answer and how many elements the chart holds.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import random
import re
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.gen_trace import GeneratedTrace, generate
from bench.server import get, serve
from devtool.store import store_files

PROCESS = "bench-process"
TYPES = [
    ("context_update", 30),
    ("tool_call", 15),
    ("tool_result", 15),
    ("trigger_event", 10),
    ("user_prompt", 8),
    ("assistant_message", 8),
    ("state_transition", 2),
    ("checkpoint", 1),
    ("error", 1),
    ("custom_metric", 10),
]


def iso(ms: float) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).isoformat()


def write_journal(path: Path, trace: GeneratedTrace, entries: int, seed: int = 11) -> None:
    """`entries` entries from a little before the run to a little after it; one invocation: the run."""
    rng = random.Random(seed)
    kinds, weights = zip(*TYPES, strict=True)
    span = trace.last_ms - trace.first_ms
    start = trace.first_ms - span * 0.02
    step = span * 1.04 / entries
    with path.open("w") as out:
        for index in range(entries):
            at = start + index * step
            if index == 0:
                kind, data = "state_transition", {"from_state": "created", "to_state": "running"}
            elif index == entries // 50:
                kind, data = "invocation_start", {"invocation": 1, "trace_id": trace.trace_id}
            elif index == entries - entries // 50:
                kind, data = "invocation_result", {"invocation": 1, "trace_id": trace.trace_id, "success": True}
            else:
                kind = rng.choices(kinds, weights)[0]
                data = {"key": f"k{rng.randrange(500)}", "value": rng.random(), "n": index}
            entry = {"entry_id": f"e{index:07d}", "process_id": PROCESS, "timestamp": iso(at), "entry_type": kind}
            out.write(json.dumps({**entry, "data": data}) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--entries", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="devtool-bench-pages-"))
    workdir.mkdir(parents=True, exist_ok=True)
    trace_path = workdir / f"trace-{args.events}.jsonl"
    info_path = workdir / f"trace-{args.events}.info.json"
    if trace_path.exists() and info_path.exists():
        trace = GeneratedTrace(**{**json.loads(info_path.read_text()), "path": trace_path})
    else:
        trace = generate(trace_path, events=args.events, seed=7)
        info_path.write_text(json.dumps({k: v for k, v in trace.__dict__.items() if k != "path"}))
    journal_path = workdir / f"journal-{args.entries}.jsonl"
    if not journal_path.exists():
        write_journal(journal_path, trace, args.entries)

    db = workdir / "bench.duckdb"
    for stale in store_files(db):
        stale.unlink(missing_ok=True)
    process, url, started = serve(db, [trace_path, journal_path])
    middle = f"e{args.entries // 2:07d}"
    pages = {
        "runs page": "",
        "runs page, search scanning every event (`?q=`)": "?q=nothing-has-this",
        "runs page, status filter": "?status=failed",
        "process page": f"processes/{PROCESS}",
        "process page, middle entry selected (state before/after)": f"processes/{PROCESS}?entry={middle}",
        "process page, invocation opened (the 1M-event run's spans)": f"processes/{PROCESS}?open={trace.trace_id}",
    }
    print(
        f"# {args.events:,} events ({trace.bytes / 1e6:,.0f} MB), {args.entries:,} journal entries; "
        f"serve loaded both and answered in {started:.1f} s · {platform.node()} · {dt.date.today()}"
    )
    print("| page | server time, median | worst | answer | chart elements |")
    print("|---|---|---|---|---|")
    try:
        for label, path in pages.items():
            times, body = [], b""
            for _ in range(args.repeat):
                took, body = get(url + path)
                times.append(took)
            elements = len(re.findall(rb'class="(?:mark |mark"|span-bar|inv-bar)', body))
            print(
                f"| {label} | {statistics.median(times):,.0f} ms | {max(times):,.0f} ms | "
                f"{len(body) / 1024:,.0f} KiB | {elements:,} |"
            )
    finally:
        process.terminate()
        process.wait(timeout=30)


if __name__ == "__main__":
    main()
