"""Benchmark of reading OTLP requests, alone: in the server's thread, and in the reader's worker process.

    python bench/bench_otlp_reader.py [--requests 200] [--batch 512]

One request of `--batch` spans, as `bench_otlp_ingest.py` posts them, is read `--requests` times:
1. by `read_spans` in this process (what a server without workers does in a thread): CPU a span;
2. by `OtlpReader` with one worker (what `devtool serve` does), one request at a time: the time a
   request, the spans a second, and this process's CPU a span (sending the body, rebuilding the
   events the worker hands back);
3. by the same worker with every request queued at once: the spans a second it reads.
The CPU this process spends is what the server's GIL is held for; the worker's own is not in it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_live import machine
from bench.bench_otlp_ingest import body
from devtool.formats.otlp_logs import SpanLogs
from devtool.web.live.otlp_reader import OtlpReader
from devtool.web.otlp_read import Body, read_spans


async def measure(requests: int, batch: int) -> None:
    sent = Body(body(os.urandom(16), os.urandom(8), batch, time.time_ns()), "identity", True, 1 << 25, 4 * batch)
    for _ in range(5):
        read_spans(sent, SpanLogs())
    began = time.process_time()
    for _ in range(requests):
        read_spans(sent, SpanLogs())
    here = (time.process_time() - began) / requests
    print(f"in this process: {here * 1e3:.1f} ms of CPU a request, {here / batch * 1e6:.1f} µs a span")

    reader = OtlpReader(1, SpanLogs())
    await reader.start()
    try:
        for _ in range(5):
            await reader.read_spans(sent)
        began, cpu = time.perf_counter(), time.process_time()
        for _ in range(requests):
            await reader.read_spans(sent)
        wall, cpu = time.perf_counter() - began, time.process_time() - cpu
        print(
            f"one worker, one at a time: {wall / requests * 1e3:.1f} ms a request, {requests * batch / wall:,.0f} "
            f"spans/s, this process's CPU {cpu / requests / batch * 1e6:.1f} µs a span"
        )
        began = time.perf_counter()
        await asyncio.gather(*(reader.read_spans(sent) for _ in range(requests)))
        wall = time.perf_counter() - began
        print(f"one worker, {requests} queued: {requests * batch / wall:,.0f} spans/s")
    finally:
        reader.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--batch", type=int, default=512)
    args = parser.parse_args()
    print(f"Machine: {machine()}; {date.today()}; load average {os.getloadavg()[0]:.2f}")
    asyncio.run(measure(args.requests, args.batch))


if __name__ == "__main__":  # the reader's worker is spawned: it imports this module again
    main()
