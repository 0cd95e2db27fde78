"""Compare two million-event runs through a real `devtool serve`: the JSON answer of `/compare`.

    python bench/bench_compare.py [--events 1000000] [--repeat 9] [--workdir DIR] [--trace FILE] [--keep-store]

1. Generates (or reuses, from `--workdir`) a trace of `--events` events (`bench/gen_trace.py`, seed
   7), or takes `--trace` (such a file, only read), and writes its "fork" into `--workdir` (kept
   there for the next run): the same events under another trace id, with one worker's final answer
   changed by one word in the middle of the run (what a replay that diverged once looks like).
2. Starts a real `devtool serve --db NEW A B`, which loads both (with `--keep-store`, the store in
   `--workdir` as a run before left it, or as `devtool load` filled it: the server finds both loaded).
3. Asks `GET /compare?a=A&b=B` with `Accept: application/json`: once cold (the runs' calls read
   from the store), then `--repeat` times (their fingerprints kept by the server while the runs do
   not grow), and checks the answer names the changed call; then the compare page of the pair,
   `--repeat` + 1 times. Reports the server's own time (`Server-Timing`): the cold one, the median
   (p50) and the worst of the warm ones, the page's first and its median after.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import statistics
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.gen_trace import generate
from bench.server import get, serve
from devtool.store import store_files

BUDGET_MS = 300
OTHER_TRACE = "f" * 32


def traces_in(workdir: Path, events: int, given: Path | None = None) -> tuple[str, Path, Path, str]:
    """The trace's id and file, its fork (one answer changed) and the callId whose answer changed."""
    path, info, fork = (
        given or workdir / f"trace-{events}.jsonl",
        workdir / f"trace-{events}.info.json",
        workdir / f"fork-{events}.jsonl",
    )
    if given is not None:
        with given.open("rb") as first:
            trace_id = str(json.loads(first.readline())["trace"]["traceId"])
    elif path.exists() and info.exists():
        trace_id = str(json.loads(info.read_text())["trace_id"])
    else:
        trace_id = generate(path, events=events, seed=7).trace_id
        info.write_text(json.dumps({"trace_id": trace_id}))
    changed_file = fork.with_suffix(".changed")
    if fork.exists() and changed_file.exists():  # written to the end before: a 10M fork takes minutes
        return trace_id, path, fork, changed_file.read_text()
    changed = ""
    with path.open("rb") as original, fork.open("wb") as out:
        for n, line in enumerate(original):
            line = line.replace(trace_id.encode(), OTHER_TRACE.encode())
            if not changed and n > events // 2 and b'"turn:end"' in line and b'"Summary for' in line:
                line = line.replace(b'"Summary for', b'"Summary about', 1)
                changed = json.loads(line)["callId"]
            out.write(line)
    changed_file.write_text(changed)
    return trace_id, path, fork, changed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument(
        "--keep-store", action="store_true", help="serve the store a run before left in --workdir (its runs loaded)"
    )
    parser.add_argument("--trace", type=Path, default=None, help="a gen_trace.py file of --events events (only read)")
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="devtool-bench-compare-"))
    workdir.mkdir(parents=True, exist_ok=True)
    trace_id, trace, fork, changed = traces_in(workdir, args.events, args.trace)
    db = workdir / "compare.duckdb"
    for stale in () if args.keep_store else store_files(db):
        stale.unlink(missing_ok=True)
    process, url, started = serve(db, [trace, fork])
    target = f"{url}compare?{urlencode({'a': trace_id[:12], 'b': OTHER_TRACE[:12]})}"
    try:
        cold, raw = get(target, accept="application/json")
        answer = json.loads(raw)
        assert answer["firstDivergence"]["callId"] == changed, answer["firstDivergence"]
        warm = []
        for _ in range(args.repeat):
            took, raw = get(target, accept="application/json")
            assert json.loads(raw)["firstDivergence"]["callId"] == changed
            warm.append(took)
        p50 = statistics.median(warm)
        print(
            f"# {args.events:,} events a run, two runs ({trace.stat().st_size / 1e6:,.0f} MB each);"
            f" serve started in {started:.1f} s · {answer['total']:,} calls a run, {answer['differing']} differing"
            f" · {platform.node()} · {dt.date.today()}"
        )
        print("| GET /compare (JSON) | server time | target |")
        print("|---|---|---|")
        print(f"| first (cold: both runs' calls read) | {cold:.0f} ms | - |")
        verdict = "met" if p50 <= BUDGET_MS else "MISSED"
        print(f"| again, p50 of {args.repeat} | {p50:.0f} ms | ≤ {BUDGET_MS} ms: {verdict} |")
        print(f"| again, worst of {args.repeat} | {max(warm):.0f} ms | - |", flush=True)
        # The page of the same pair (the comparison kept by then: its own reads, the page's others),
        # each as it is measured: at 10M a page may take long.
        page = f"{url}compare?{urlencode({'a': trace_id, 'b': OTHER_TRACE})}"  # whole ids: no redirect
        first_page = get(page, accept="text/html")[0]
        print(f"| the page (HTML), first | {first_page:.0f} ms | - |", flush=True)
        pages = [get(page, accept="text/html")[0] for _ in range(args.repeat)]
    finally:
        process.terminate()
        process.wait(timeout=60)
    page_p50 = statistics.median(pages)
    verdict = "met" if page_p50 <= BUDGET_MS else "MISSED"
    print(f"| the page, p50 of {args.repeat} after | {page_p50:.0f} ms | ≤ {BUDGET_MS} ms: {verdict} |")
    print(f"| the page, worst of {args.repeat} after | {max(pages):.0f} ms | - |")


if __name__ == "__main__":
    main()
