"""Benchmark of the live derive: one batch's spans and run summary on a run that has grown to N spans.

    python bench/bench_derive.py [--sizes 40,120] [--batch 512] [--repeat 7]

For each size, appends that many OTLP batches of `--batch` GenAI chat spans (`bench_otlp_ingest.body`,
what the SDK's exporter sends, through the OTLP mapping and the event gate) to one run of a fresh
DuckDB file, each derived as it comes; then appends one more batch and derives it `--repeat` times,
each in a transaction rolled back, and reports the best and the median time of the derive
(`derive.refresh`, as `Store.derive_backlog` runs it). A derive whose cost follows the batch takes
the same time at every size; one that re-reads the run grows with it.
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_live import machine
from bench.bench_otlp_ingest import body
from devtool.formats import otlp_events
from devtool.formats.otlp_proto import decode_protobuf_request
from devtool.store import Store, derive, store_events
from devtool.store.event_gate import check_events


def derive_times(folder: Path, batches: int, size: int, repeat: int) -> list[float]:
    store = Store(folder / f"derive-{batches}.duckdb")
    trace, root = bytes.fromhex(secrets.token_hex(16)), os.urandom(8)

    def batch() -> list[object]:
        return check_events(list(otlp_events(decode_protobuf_request(body(trace, root, size, time.time_ns())).spans)))

    try:
        for _ in range(batches):
            store_events(store, batch(), stream="otlp")
        store_events(store, batch(), stream="otlp", derive=False)
        taken = store.backlog.take()
        times = []
        for _ in range(repeat):
            with store.writer() as conn:
                conn.execute("BEGIN TRANSACTION")
                began = time.perf_counter()
                derive.refresh(conn, min(taken.values()) - 1, traces=tuple(taken))
                times.append(time.perf_counter() - began)
                conn.execute("ROLLBACK")
        return times
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="40,120", help="run sizes, in batches before the one derived")
    parser.add_argument("--batch", type=int, default=512, help="spans a batch (default 512, the SDK's)")
    parser.add_argument("--repeat", type=int, default=7, help="derives of the last batch (default 7)")
    args = parser.parse_args()
    print(f"Machine: {machine()}")
    with tempfile.TemporaryDirectory(prefix="bench-derive-") as folder:
        for batches in (int(n) for n in args.sizes.split(",")):
            times = derive_times(Path(folder), batches, args.batch, args.repeat)
            print(
                f"run of {batches * args.batch:,} spans: derive of {args.batch} more best {min(times) * 1000:.1f} ms, "
                f"median {statistics.median(times) * 1000:.1f} ms; load average {os.getloadavg()[0]:.2f}"
            )


if __name__ == "__main__":
    main()
