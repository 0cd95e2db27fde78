"""Benchmark of OTLP/HTTP ingest: protobuf batches into `devtool serve` at a sustained rate, watched over SSE.

    python bench/bench_otlp_ingest.py [--rate 10000] [--seconds 30] [--batch 512] [--connections 2]
                                      [--clients 1] [--workdir DIR] [--tree DIR ...] [--repeat 1]

1. Starts a real `devtool serve` (its own process, a fresh DuckDB file).
2. Opens `--clients` SSE connections to the run's stream (`/runs/<trace_id>/live`) before it starts
   (`bench_live.listen`).
3. A producer process posts `POST /v1/traces` bodies of `--batch` spans (an `ExportTraceServiceRequest`
   in protobuf, as the SDK's OTLP/HTTP exporter sends, GenAI chat spans with their attributes) at
   `--rate` spans a second for `--seconds` over `--connections` connections at once (an SDK exporter
   sends one batch at a time: two are two services, or a Collector's workers), one trace whose root
   span comes last (as an exporter sends it). Each span starts at the wall clock when its batch is
   encoded, so an event's timestamp is its export time. The producer builds bodies with
   `opentelemetry-proto`, not the SDK's span objects: the SDK's own encoder costs ~40 µs a span, and
   the producer must keep up to measure the server.
4. Reports the spans a second the server took: the spans over the time their sends took, the last
   batch's interval included (an exporter sends its next batch only once the last is answered, so a
   server that falls behind delays the sends), and how late the sends went in each half of the run
   (sustained: the second half is no later than the first); over every event every client
   received, the latency from export (its timestamp) to receipt over SSE: p50, p95 (target
   ≤ 250 ms), p99, max; the server's CPU time (with its OTLP reader's), and the producer's, which
   shares the machine with it.
   Target: ≥ 10,000 spans/s sustained with p95 ≤ 250 ms.

Runs vary by more than a change worth making: a run that falls behind early stays behind
(BENCHMARKS.md, issue 16). To compare checkouts (`--tree . ../wt/main`), each is served in turn,
`--repeat` rounds, and the medians of each are printed at the end.
"""

from __future__ import annotations

import argparse
import http.client
import os
import secrets
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_live import machine, percentile, serving, spread, watch


def body(trace_id: bytes, root: bytes, count: int, start_ns: int) -> bytes:
    """One export request of `count` chat spans under `root`, starting at `start_ns`."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest()
    resource = request.resource_spans.add()
    attribute = resource.resource.attributes.add()
    attribute.key, attribute.value.string_value = "service.name", "bench-agents"
    scope = resource.scope_spans.add()
    scope.scope.name, scope.scope.version = "bench", "1"
    for _ in range(count):
        span = scope.spans.add()
        span.trace_id, span.span_id, span.parent_span_id = trace_id, os.urandom(8), root
        span.name, span.kind = "chat gpt-4.1-mini", 3
        span.start_time_unix_nano, span.end_time_unix_nano = start_ns, start_ns + 1000
        for key, text in (
            ("gen_ai.operation.name", "chat"),
            ("gen_ai.provider.name", "openai"),
            ("gen_ai.request.model", "gpt-4.1-mini"),
            ("gen_ai.agent.name", "bench"),
            ("gen_ai.input.messages", '[{"role":"user","parts":[{"type":"text","content":"hello"}]}]'),
            ("gen_ai.output.messages", '[{"role":"assistant","parts":[{"type":"text","content":"hi"}]}]'),
        ):
            item = span.attributes.add()
            item.key, item.value.string_value = key, text
        for key, number in (("gen_ai.usage.input_tokens", 12), ("gen_ai.usage.output_tokens", 3)):
            item = span.attributes.add()
            item.key, item.value.int_value = key, number
    return bytes(request.SerializeToString())


def root_body(trace_id: bytes, root: bytes, start_ns: int) -> bytes:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id, span.name = trace_id, root, "invoke_agent bench"
    span.start_time_unix_nano, span.end_time_unix_nano = start_ns, time.time_ns()
    item = span.attributes.add()
    item.key, item.value.string_value = "gen_ai.operation.name", "invoke_agent"
    return bytes(request.SerializeToString())


def produce(url: str, trace_hex: str, rate: int, seconds: float, batch: int, connections: int, done: Any) -> None:
    """Post `rate` spans/s in batches for `seconds` over `connections` connections (exporters), then the
    root; report what was sent and how long each answer took."""
    cpu = time.process_time()
    parts = urlsplit(url)
    trace_id, root = bytes.fromhex(trace_hex), os.urandom(8)
    interval = batch / rate
    batches = int(rate * seconds / batch)
    began_ns = time.time_ns()
    began = time.monotonic()
    answers: list[float] = []
    lateness: list[tuple[int, float]] = []  # (batch, s after its time that it was sent)

    def exporter(first: int) -> None:
        connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=60)
        for n in range(first, batches, connections):
            delay = began + n * interval - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            lateness.append((n, max(0.0, -delay)))
            sent = time.monotonic()
            payload = body(trace_id, root, batch, time.time_ns())
            connection.request("POST", "/v1/traces", payload, {"Content-Type": "application/x-protobuf"})
            answer = connection.getresponse()
            answer.read()
            if answer.status != 200:
                raise SystemExit(f"POST /v1/traces answered {answer.status}")
            answers.append((time.monotonic() - sent) * 1000)

    threads = [threading.Thread(target=exporter, args=(k,)) for k in range(connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # The batches went out over their sends and the last one's interval. The last answer's wait is
    # latency (reported apart), and counting it here read 9,967 spans/s for a server on time at 10,000.
    took = max(n * interval + late for n, late in lateness) + interval
    connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=120)
    payload = root_body(trace_id, root, began_ns)
    connection.request("POST", "/v1/traces", payload, {"Content-Type": "application/x-protobuf"})
    connection.getresponse().read()
    cpu = time.process_time() - cpu
    lateness.sort()
    done.put(
        {
            "spans": batches * batch,
            "took": took,
            "answers": answers,
            "late": sum(late > interval for _, late in lateness),
            "lateness": [late * 1000 for _, late in lateness],
            "cpu": cpu,
        }
    )


@dataclass(frozen=True, slots=True)
class Run:
    """What one run measured, for the medians."""

    rate: float  # spans a second taken
    p95: float  # export → SSE, ms
    cpu_per_span: float  # µs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=int, default=10_000, help="spans a second (default 10,000)")
    parser.add_argument("--seconds", type=float, default=30, help="how long the producer sends (default 30)")
    parser.add_argument("--batch", type=int, default=512, help="spans a request (default 512, the SDK's)")
    parser.add_argument("--connections", type=int, default=2, help="exporters sending at once (default 2)")
    parser.add_argument("--clients", type=int, default=1, help="SSE clients watching the run (default 1)")
    parser.add_argument("--workdir", type=Path, help="where the database goes (default: a temporary folder)")
    parser.add_argument("--tree", type=Path, nargs="+", help="checkouts to serve in turn (default: this one)")
    parser.add_argument("--repeat", type=int, default=1, help="rounds over the trees (default 1)")
    args = parser.parse_args()
    trees: list[Path | None] = [tree.resolve() for tree in args.tree] if args.tree else [None]
    runs: dict[Path | None, list[Run]] = {tree: [] for tree in trees}
    for _ in range(args.repeat):
        for tree in trees:
            if tree is not None:
                print(f"== {tree}")
            runs[tree].append(ingest(args, tree))
    if args.repeat > 1 or len(trees) > 1:
        for tree, found in runs.items():
            print(
                f"{tree or 'this checkout'}, medians of {len(found)}: "
                f"{statistics.median(run.rate for run in found):,.0f} spans/s "
                f"({min(run.rate for run in found):,.0f}-{max(run.rate for run in found):,.0f}); "
                f"export→SSE p95 {statistics.median(run.p95 for run in found):.0f} ms; "
                f"{statistics.median(run.cpu_per_span for run in found):.0f} µs of server CPU a span"
            )


def ingest(args: argparse.Namespace, tree: Path | None) -> Run:
    """One run against a fresh server (of `tree`, or this checkout), reported as it ends."""
    trace_id = secrets.token_hex(16)
    producing = (args.rate, args.seconds, args.batch, args.connections)
    with serving(args.workdir or Path(tempfile.mkdtemp(prefix="bench-otlp-")), "otlp", tree) as server:
        sent, results, cpu, wall, _ = watch(
            server.process.pid, server.url, trace_id, args.clients, produce, producing, args.seconds * 5 + 120
        )

    spans = sent["spans"]
    print(f"Machine: {machine()}; {date.today().isoformat()}; load average {os.getloadavg()[0]:.2f} at the end")
    print(
        f"Producer: {spans:,} spans in {sent['took']:.1f} s ({spans / sent['took']:,.0f} spans/s) in batches of "
        f"{args.batch}; answer time p50 {percentile(sent['answers'], 0.5):.0f} ms, "
        f"p95 {percentile(sent['answers'], 0.95):.0f} ms, max {max(sent['answers']):.0f} ms; "
        f"{sent['late']} batches sent more than an interval late; its CPU {sent['cpu']:.1f} s "
        f"({sent['cpu'] / sent['took']:.2f} cores, on the same machine)"
    )
    # A server that keeps up holds the sends' lateness to about an answer's time; one that cannot
    # take the rate falls further behind as the run goes on.
    lateness = sent["lateness"]
    half = len(lateness) // 2
    print(
        f"Sends late by: first half p50 {percentile(lateness[:half], 0.5):.0f} ms, max {max(lateness[:half]):.0f} ms; "
        f"second half p50 {percentile(lateness[half:], 0.5):.0f} ms, max {max(lateness[half:]):.0f} ms; "
        f"the last batch {lateness[-1]:.0f} ms"
    )
    latencies: list[float] = []
    for index, result in enumerate(results):
        received = len(result["ids"])
        print(f"client {index}: {received:,} of {2 * spans + 2:,} events, closed: {result['closed']}")
        # The root span's events carry its start, the run's first moment, not when it was exported.
        latencies.extend(result["latencies"][:-2] if result["closed"] else result["latencies"])
    print(f"Latency export→SSE receipt over {len(latencies):,} events: {spread(latencies)}")
    print(f"Server CPU: {cpu:.1f} s over {wall:.1f} s ({cpu / wall:.2f} cores), {cpu / spans * 1e6:.0f} µs per span")
    return Run(spans / sent["took"], percentile(latencies, 0.95), cpu / spans * 1e6)


if __name__ == "__main__":
    main()
