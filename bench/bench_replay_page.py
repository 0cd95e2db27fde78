"""A replay of a big run through a real `devtool serve`: its own run page, and the compare of the pair.

    python bench/bench_replay_page.py --trace FILE [--repeat 7] --workdir DIR
    python bench/bench_replay_page.py --events 1000000 --workdir DIR

1. The trace: `--trace` (a `bench/gen_trace.py` file, read only) or one generated into `--workdir`
   (`--events`, seed 7).
2. Its replay, written into `--workdir`: the same events under another trace id, its `runWith:start`
   carrying `metadata.replay.originalTraceId` (as the DevTool's Replay records it), every model turn
   and tool call served from the journal (`cache: true`) but one worker's summary turn halfway
   through, whose input changed (another contentHash; its answer one word changed): it ran live.
3. `devtool load` puts both into `--workdir`'s store once (a later run of the bench reuses it, so the
   code before and after a change is timed on the same store), then `devtool serve` opens it.
4. Asks, each once first then `--repeat` times, the server's own time (`Server-Timing`):
   `GET /compare?a=&b=` JSON (first of all: nothing of the runs read yet), the compare page, the
   replay's run page and its header actions (both say which calls ran live, and why:
   `store/queries/replay_calls.py`, and what the replay saved: `replay_saving.py`).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import statistics
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.gen_trace import generate
from bench.server import child_env, get, serve

BUDGET_MS = 300
REPLAY = "e" * 32


def replay_of(trace: Path, out: Path) -> tuple[str, str]:
    """Write `trace`'s replay to `out` (unless there already); the original's trace id and the callId
    that ran live."""
    with trace.open("rb") as original:
        first = json.loads(original.readline())
    trace_id = first["trace"]["traceId"]
    done = out.with_suffix(".live")
    if out.exists() and done.exists():
        return trace_id, done.read_text()
    live, half = "", trace.stat().st_size // 2
    with trace.open("rb") as original, out.open("wb") as written:
        read = 0
        for line in original:
            read += len(line)
            line = line.replace(trace_id.encode(), REPLAY.encode())
            if line.startswith(b'{"type":"runWith:start"'):
                event = json.loads(line)
                event["metadata"] = {"replay": {"originalTraceId": trace_id}}
                line = json.dumps(event, separators=(",", ":")).encode() + b"\n"
            elif not live and read > half and b'"turn:end"' in line and b'"Summary for' in line:
                event = json.loads(line)
                event["message"]["content"] = event["message"]["content"].replace("Summary for", "Summary about", 1)
                event["contentHash"] = event["contentHash"][::-1]
                live = event["callId"]
                line = json.dumps(event, separators=(",", ":")).encode() + b"\n"
            else:
                line = line.replace(b'"cache":false', b'"cache":true')
            written.write(line)
    done.write_text(live)
    return trace_id, live


def timed(url: str, repeat: int, *, accept: str = "text/html", htmx: bool = False) -> tuple[float, list[float]]:
    first = get(url, accept=accept, htmx=htmx)[0]
    return first, [get(url, accept=accept, htmx=htmx)[0] for _ in range(repeat)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trace", type=Path, default=None)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--workdir", type=Path, required=True)
    # At 10M events the second run's load ran out of DuckDB's default 1 GiB (the first loaded in it).
    parser.add_argument("--memory-limit", default="4GiB", help="the loads' DuckDB memory limit")
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    trace = args.trace or args.workdir / f"trace-{args.events}.jsonl"
    if args.trace is None and not trace.exists():
        generate(trace, events=args.events, seed=7)
    replay = args.workdir / f"replay-{trace.stem}.jsonl"
    original, live = replay_of(trace, replay)
    db = args.workdir / f"replay-{trace.stem}.duckdb"
    loaded = db.with_suffix(".loaded")
    if not loaded.exists():
        command = [sys.executable, "-m", "devtool", "load", "--db", str(db), "--memory-limit", args.memory_limit]
        command += [str(trace), str(replay)]
        subprocess.run(command, check=True, env=child_env(PYTHONUNBUFFERED="1"))
        loaded.write_text("")
    process, url, _ = serve(db, [])
    target = f"{url}compare?{urlencode({'a': original, 'b': REPLAY})}"
    asks = {  # the compare JSON first: the target, asked before any page warms the server
        "`/compare` JSON": (target, "application/json", False),
        "the compare page": (target, "text/html", False),
        "the replay's run page": (f"{url}runs/{REPLAY}", "text/html", False),
        "its header actions (which calls ran live)": (f"{url}runs/{REPLAY}/actions", "text/html", True),
    }
    print(
        f"# the replay of {trace.name} ({trace.stat().st_size / 1e6:,.0f} MB) · {platform.node()} · {dt.date.today()}"
    )
    print(f"| request | first | p50 of {args.repeat} | worst |")
    print("|---|---|---|---|", flush=True)
    try:
        for name, (address, accept, htmx) in asks.items():  # each row as it is measured: a later one may time out
            first, again = timed(address, args.repeat, accept=accept, htmx=htmx)
            print(
                f"| {name} | {first:,.0f} ms | {statistics.median(again):,.0f} ms | {max(again):,.0f} ms |", flush=True
            )
        answer = json.loads(get(target, accept="application/json")[1])
        assert answer["firstDivergence"]["callId"] == live, answer["firstDivergence"]
        actions = get(f"{url}runs/{REPLAY}/actions", htmx=True)[1].decode()
        assert f"{live}</code>" in actions, "the call that ran live is not named"
        assert '<span id="live-changed-count">1</span>' in actions, "not one call ran live for its input"
    finally:
        process.terminate()
        process.wait(timeout=120)
    print(f"({answer['total']:,} calls a run, {answer['differing']} differing; target p50 ≤ {BUDGET_MS} ms)")


if __name__ == "__main__":
    main()
