"""Overhead of the core runtime per tool call, against a plain await and an OpenTelemetry span.

    python bench/bench_core.py [--calls 10000] [--repeat 5]

One agent makes N tool calls (no-op handler, a JSON-schema'd integer argument, distinct inputs)
with events going to a JSONL file. Reported per call, as the median of the repeats:
- plain: `await handler(i=i)` with no runtime at all;
- off / on: the same calls through `run_with(enable_snapshot=False/True)`, overhead = time - plain;
- cached: a replay of the "on" run from its dump, every call served from the journal;
- otel: one OpenTelemetry SDK span per call (SimpleSpanProcessor + ConsoleSpanExporter writing
  one JSON line per span to a file), the anchor; our overheads are also given as a ratio to it.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

from devtool.core import JsonlSink, create_agent, create_tool, run_with
from devtool.core.debugger import dump_snapshot

PARAMETERS = {"type": "object", "properties": {"i": {"type": "integer"}}, "required": ["i"]}


async def noop(i: int) -> None:
    return None


def agent(calls: int, box: dict[str, Any]) -> Any:
    tool = create_tool("noop", noop, parameters=PARAMETERS)

    async def handler(props: Any) -> None:
        started = time.perf_counter()
        for i in range(calls):
            await tool(i=i)
        box["elapsed"] = time.perf_counter() - started
        if box.get("dump"):
            box["snapshot"] = dump_snapshot()

    return create_agent("bench", handler)


async def plain(calls: int) -> float:
    started = time.perf_counter()
    for i in range(calls):
        await noop(i=i)
    return time.perf_counter() - started


async def through_runtime(calls: int, trace: Path, **options: Any) -> tuple[float, dict[str, Any]]:
    box: dict[str, Any] = {"dump": options.pop("dump", False)}
    with JsonlSink(trace) as sink:
        await run_with(lambda: agent(calls, box)(None), sinks=[sink], **options)
    return box["elapsed"], box


async def otel(calls: int, out: Path) -> float:
    with out.open("w") as handle:
        provider = TracerProvider()
        exporter = ConsoleSpanExporter(out=handle, formatter=lambda span: span.to_json(indent=None) + "\n")
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        tracer = provider.get_tracer("bench")
        started = time.perf_counter()
        for i in range(calls):
            with tracer.start_as_current_span("tool noop") as span:
                span.set_attribute("tool.input.i", i)
                await noop(i=i)
        elapsed = time.perf_counter() - started
        provider.shutdown()
    return elapsed


def median_us(samples: list[float], calls: int) -> float:
    return statistics.median(samples) / calls * 1e6


def measure(calls: int, repeat: int) -> dict[str, float]:
    samples: dict[str, list[float]] = {"plain": [], "off": [], "on": [], "cached": [], "otel": []}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for round_ in range(repeat):
            trace = folder / f"trace{round_}.jsonl"
            samples["plain"].append(asyncio.run(plain(calls)))
            samples["off"].append(asyncio.run(through_runtime(calls, trace, enable_snapshot=False))[0])
            elapsed, box = asyncio.run(through_runtime(calls, trace, enable_snapshot=True, dump=True))
            samples["on"].append(elapsed)
            samples["cached"].append(asyncio.run(through_runtime(calls, trace, snapshot=box["snapshot"]))[0])
            samples["otel"].append(asyncio.run(otel(calls, folder / f"otel{round_}.jsonl")))
    return {name: median_us(values, calls) for name, values in samples.items()}


def report(calls: int, figures: dict[str, float]) -> str:
    plain_us, otel_us = figures["plain"], figures["otel"]
    otel_overhead = otel_us - plain_us
    rows = [
        ("plain `await` (no runtime)", plain_us, None, "-"),
        ("snapshots off, events to JSONL", figures["off"], figures["off"] - plain_us, "≤ 25 µs"),
        ("snapshots on, events to JSONL", figures["on"], figures["on"] - plain_us, "≤ 40 µs"),
        ("fully cached replay, events to JSONL", figures["cached"], None, "≤ 40 µs per call"),
        ("OpenTelemetry SDK span per call (anchor)", otel_us, otel_overhead, "-"),
    ]
    lines = [
        f"{calls:,} tool calls; median per call of the repeats",
        "",
        "| what | per call | overhead over plain | ratio to OTel overhead | target |",
        "|---|---|---|---|---|",
    ]
    for name, per_call, overhead, target in rows:
        over = f"{overhead:.1f} µs" if overhead is not None else "-"
        base = overhead if overhead is not None else per_call
        ratio = f"{base / otel_overhead:.2f}×" if name != rows[-1][0] and name != rows[0][0] else "-"
        lines.append(f"| {name} | {per_call:.1f} µs | {over} | {ratio} | {target} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    print(report(args.calls, measure(args.calls, args.repeat)))


if __name__ == "__main__":
    main()
