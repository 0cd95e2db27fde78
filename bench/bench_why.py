"""Why a run went as it did, at scale: `/runs/<id>/cause` and `/runs/<id>/find?q=` as JSON from a real
`devtool serve`, on a `gen_trace.py` run made to fail (the issue's target: p50 ≤ 300 ms at 1M and 10M).

The generated run ends well (its failed workers are handled); this makes it fail as a batch job does
when it gives up on its last failed worker: the orchestrator's generation, the orchestrator and the run
end with that worker's error, so the cause is that worker's failed turn, four levels down. Finds ask
for a word of every model answer ("ledger": the first slice of events answers it), the error of the
last failed worker (in a few events near the end: the blocks of its words are read), a phrase of a
model answer, a word of no event (the run's words answer it, no event is read), and two words every
block holds that no event says together (the worst case: every event is read, a million at most).
The first ask is shown apart: the run's faults are kept once read (`queries/cause.py`'s `KEPT_RUNS`),
so the cause's later asks are a lookup.

    .venv/bin/python bench/bench_why.py --events 1000000 [--db DB] [--repeat 7]

Compare (a sibling's) adds its own rows in its own file.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import orjson

from bench.gen_trace import generate
from bench.server import serve
from devtool.store import Store, load_file


def failing_trace(path: Path, events: int, seed: int) -> str:
    """Write a `gen_trace` run of `events` events that fails with its last failed worker's error; that
    error's message."""
    raw = path.with_suffix(".raw.jsonl")
    generate(raw, events=events, seed=seed)
    last = None
    with raw.open("rb") as lines:
        for line in lines:
            if b'"turn:end"' in line and b"upstream 503" in line:
                last = orjson.loads(line)["error"]
    if last is None:
        raise SystemExit("the generated run has no failed worker: raise --events")
    with raw.open("rb") as lines, path.open("wb") as out:
        for line in lines:
            if b'"runWith:end"' in line or (
                b'"orchestrator"' in line and (b'"agent:end"' in line or b'"generation:end"' in line)
            ):
                event = orjson.loads(line)
                if event["type"] in ("runWith:end", "agent:end", "generation:end"):
                    event.update(success=False, error=last)
                    line = orjson.dumps(event) + b"\n"
            out.write(line)
    raw.unlink()
    return str(last["message"])


def ask(url: str) -> tuple[float, float, Any, str]:
    """Server time (its `Server-Timing`) and wall time, in ms, the JSON answer and how much a find read."""
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    began = time.perf_counter()
    with urllib.request.urlopen(request, timeout=300) as answer:
        timing = answer.headers.get("Server-Timing", "")
        searched = answer.headers.get("Find-Searched", "")
        body = answer.read()
    wall = (time.perf_counter() - began) * 1000
    found = re.search(r"dur=([0-9.]+)", timing)
    return float(found.group(1)) if found else wall, wall, json.loads(body), searched


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--db", type=Path, help="a store made by an earlier run of this bench (kept)")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-why-"))
    db = args.db or folder / "why.duckdb"
    if not db.exists():
        trace = folder / "failing.jsonl"
        began = time.perf_counter()
        error = failing_trace(trace, args.events, args.seed)
        print(f"generated {args.events:,} events in {time.perf_counter() - began:.0f} s; the run fails with {error!r}")
        began = time.perf_counter()
        store = Store(db)
        load_file(store, trace)
        store.close()
        trace.unlink()
        print(f"loaded in {time.perf_counter() - began:.0f} s into {db}")
    store = Store(db)
    trace_id, events = store.query("SELECT trace_id, events FROM runs ORDER BY events DESC LIMIT 1")[0]
    error = store.query("SELECT error FROM spans WHERE trace_id = ? AND kind = 'runWith'", [trace_id])[0][0]
    store.close()
    rare = str(error).rsplit(" ", 1)[-1]
    process, url, _ = serve(db, [])
    try:
        asks = {
            "cause": f"runs/{trace_id}/cause",
            "find, a word of every answer": f"runs/{trace_id}/find?q=ledger",
            "find, a phrase of answers": f"runs/{trace_id}/find?q=balance%20that%20does",
            "find, the last failure's error (rare, late)": f"runs/{trace_id}/find?q=serving%20worker%20{rare}",
            "find, a word of no event": f"runs/{trace_id}/find?q=zebra",
            # Words every block holds, never said together: every event is read (a million at most).
            "find, two words of every block, never together": f"runs/{trace_id}/find?q=ledger%20worker",
        }
        print(f"\n{events:,} events, run {trace_id}; median (worst) of {args.repeat} after one warm-up, server time\n")
        print("| request | first ask | server p50 | worst | wall p50 | answer |")
        print("|---|---|---|---|---|---|")
        for name, path in asks.items():
            first = ask(url + path)[0]
            times = [ask(url + path) for _ in range(args.repeat)]
            server = [t[0] for t in times]
            wall = [t[1] for t in times]
            answer = times[-1][2]
            said = (
                f"chain of {len(answer['chain'])}, {answer['error']['name']}"
                if name == "cause"
                else f"{len(answer)} hits, events read {times[-1][3]}"
            )
            print(
                f"| {name} | {first:.0f} ms | {statistics.median(server):.0f} ms | {max(server):.0f} ms "
                f"| {statistics.median(wall):.0f} ms | {said} |"
            )
    finally:
        process.terminate()
        process.wait(timeout=60)


if __name__ == "__main__":
    main()
