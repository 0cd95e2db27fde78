"""Where a posted OTLP span's server CPU goes, step by step, in one process: the ingest path without HTTP.

    python bench/bench_otlp_parts.py [--run 8] [--per 8] [--rounds 3]
    valgrind --tool=callgrind --dump-before=zlib_crc32 python bench/bench_otlp_parts.py --rounds 1

A run of `--run` batches of 512 GenAI chat spans (`bench_otlp_ingest.body`, what the SDK's exporter
sends) is appended to a fresh DuckDB file and derived; then, `--rounds` times, `--per` more batches
each go through the server's steps as `POST /v1/traces` and the live appender take them:

- decode: the protobuf body into spans (`otlp_proto.decode_protobuf_request`);
- map: the spans into their TraceEvents (`otlp_map.otlp_events`);
- gate: the events through the event gate (`event_gate.check_events`);
- store: their insert with the exactly-once check (`store_events`, derive left to the backlog);
- live: their live views and one SSE `events` message (`LiveEvent.of`, `RunFeed.message`);

and one derive covers the `--per` batches (`Store.derive_backlog`: spans, run summary, search
words), as one derive follows several appends under load. Reports each step's CPU time
(`time.process_time`, DuckDB's threads included) in µs a span, best round. DuckDB runs on one thread
(`SET threads = 1`), so the figures are one core's. Each step starts with a call of `zlib.crc32`, so
callgrind's `--dump-before=zlib_crc32` writes one profile a step: instruction counts, which do not
depend on the machine's load (callgrind_annotate, or `grep totals`, reads them).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_live import machine
from bench.bench_otlp_ingest import body
from devtool.formats import otlp_events
from devtool.formats.otlp_proto import decode_protobuf_request
from devtool.store import Store, store_events
from devtool.store.event_gate import check_events
from devtool.web.live.broker import LiveEvent
from devtool.web.live.streams import RunFeed

BATCH = 512
STEPS = ("decode", "map", "gate", "store", "live", "derive")
T0 = 1_796_151_461_268_314_665


def mark(step: str) -> float:
    """The start of a step: a marker for callgrind, and the CPU time now."""
    zlib.crc32(step.encode())
    return time.process_time()


def rounds(folder: Path, run: int, per: int, count: int) -> list[dict[str, float]]:
    """The CPU seconds of each step, a dict per round."""
    store = Store(folder / "parts.duckdb")
    store.query("SET threads = 1")
    trace, root = os.urandom(16), os.urandom(8)
    bodies = iter(body(trace, root, BATCH, T0 + n * 10**8) for n in range(run + per * count))
    try:
        for _ in range(run):
            store_events(store, check_events(list(otlp_events(decode_protobuf_request(next(bodies)).spans))))
        found = []
        for _ in range(count):
            spent = dict.fromkeys(STEPS, 0.0)
            for _ in range(per):
                payload = next(bodies)
                marks = [mark("decode")]
                decoded = decode_protobuf_request(payload)
                marks.append(mark("map"))
                events = list(otlp_events(decoded.spans))
                marks.append(mark("gate"))
                checked = check_events(events)
                marks.append(mark("store"))
                ids = store_events(store, checked, stream="otlp", derive=False)
                marks.append(mark("live"))
                live = [LiveEvent.of(i, e.event) for i, e in zip(ids, checked, strict=True) if i is not None]
                RunFeed(store, trace.hex(), 0.1).message(live).encode()
                marks.append(mark("end"))
                for step, start, end in zip(STEPS[:-1], marks[:-1], marks[1:], strict=True):
                    spent[step] += end - start
            deriving = mark("derive")
            store.derive_backlog()
            spent["derive"] = mark("end") - deriving
            found.append(spent)
        return found
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", type=int, default=8, help="batches in the run before (default 8)")
    parser.add_argument("--per", type=int, default=8, help="batches a derive covers (default 8)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of --per batches (default 3)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-otlp-parts-") as folder:
        found = rounds(Path(folder), args.run, args.per, args.rounds)
    spans = args.per * BATCH
    print(f"Machine: {machine()}; load average {os.getloadavg()[0]:.2f} at the end")
    print(f"{args.per} batches of {BATCH} spans after a run of {args.run}, one derive; best of {args.rounds} rounds")
    total = 0.0
    for step in STEPS:
        best = min(spent[step] for spent in found) / spans * 1e6
        total += best
        print(f"{step:7} {best:7.1f} µs a span")
    print(f"{'total':7} {total:7.1f} µs a span")


if __name__ == "__main__":
    main()
