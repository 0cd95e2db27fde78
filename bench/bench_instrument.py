"""Overhead of the SDK instrumentation per request, over the bare SDK call, against the fake provider.

    python bench/bench_instrument.py [--rounds 1000] [--chars 400]

A real fake provider process (`testkit.fake_provider`) answers every request with the same text
(`--chars` characters; streamed in 8-character chunks, with usage) over loopback HTTP. One `openai.OpenAI`
client (kept-alive connections) makes, in each round and in an order that rotates from round to round,
one request of each kind, whole (`chat.completions.create`) and streamed (`stream=True`, the chunks read
and their text joined):
- bare: the SDK's own `request`, unwrapped for that call (the SDK as if never instrumented);
- unrecorded: through the wrapper, outside any run (what every request of a process that called
  `install()` pays when it is not being recorded);
- recorded: through the wrapper inside a recorded run (`devtool.record`, events to a JSONL file): the
  turn's events, the content hash, the journal entry, usage and cost, the streamed bytes read as they pass.

Reported per request: the median wall time of each kind, the median over rounds of the difference to
that round's bare request (paired, so a burst of load on the shared two cores falls on both), and this
process's CPU time over bare (what our code costs). The target is an overhead of at most 50 µs.
"""

from __future__ import annotations

import argparse
import contextvars
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import openai

import devtool
import devtool.instrument
from testkit.fake_provider import FakeProviderProcess

KEY = "sk-bench-0000000000"
MESSAGES = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Describe Lisbon."}]


def measure(client: openai.OpenAI, rounds: int, trace: Path) -> dict[str, dict[str, list[float]]]:
    base = openai._base_client.SyncAPIClient  # type: ignore[attr-defined]
    wrapped = base.request
    original = wrapped.__wrapped__

    def whole() -> str:
        return client.chat.completions.create(model="gpt-4.1-mini", messages=MESSAGES).choices[0].message.content or ""

    def streamed() -> str:
        stream = client.chat.completions.create(
            model="gpt-4.1-mini", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
        )
        return "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)

    def bare(ask: Callable[[], str]) -> Callable[[], str]:
        def call() -> str:
            base.request = original
            try:
                return ask()
            finally:
                base.request = wrapped

        return call

    outside = contextvars.Context()  # no run in it
    kinds: dict[str, Callable[[], Any]] = {}
    for form, ask in (("whole", whole), ("streamed", streamed)):
        kinds[f"{form} bare"] = bare(ask)
        kinds[f"{form} unrecorded"] = lambda ask=ask: outside.run(ask)
        kinds[f"{form} recorded"] = ask
    times: dict[str, dict[str, list[float]]] = {kind: {"wall": [], "cpu": []} for kind in kinds}
    order = list(kinds)
    with devtool.record("bench", to=trace):
        for round_ in range(rounds + 30):  # the first 30 rounds warm connections, caches and the server up
            order = order[1:] + order[:1]
            for kind in order:
                wall, cpu = time.perf_counter(), time.process_time()
                kinds[kind]()
                if round_ >= 30:
                    times[kind]["wall"].append(time.perf_counter() - wall)
                    times[kind]["cpu"].append(time.process_time() - cpu)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--chars", type=int, default=400)
    args = parser.parse_args()
    devtool.instrument.openai()
    load_before = os.getloadavg()
    text = ("Lisbon: hills, trams, tiles and tarts. " * (args.chars // 38 + 1))[: args.chars]
    with tempfile.TemporaryDirectory() as folder, FakeProviderProcess.start() as process:
        fake = process.namespace()
        fake.reply({"text": text, "usage": {"input": 30, "output": args.chars // 4}}, times=None)
        client = openai.OpenAI(base_url=f"{process.url}/v1", api_key=KEY, max_retries=0)
        times = measure(client, args.rounds, Path(folder) / "trace.jsonl")
        client.close()
    load_after = os.getloadavg()
    print(f"bench_instrument · {date.today()} · {platform.machine()}, {os.cpu_count()} cores · {args.rounds} rounds")
    print(f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f}")
    print(f"answer: {args.chars} characters, streamed in {-(-args.chars // 8)} chunks")
    print(f"{'what':<20} {'wall':>9} {'over bare':>10} {'ratio':>7} {'cpu over bare':>14}")
    for kind, measured in times.items():
        bare = times[kind.rsplit(" ", 1)[0] + " bare"]
        paired = statistics.median(w - b for w, b in zip(measured["wall"], bare["wall"], strict=True))
        wall = statistics.median(measured["wall"])
        cpu_over = statistics.fmean(measured["cpu"]) - statistics.fmean(bare["cpu"])
        ratio = paired / statistics.median(bare["wall"])
        print(f"{kind:<20} {wall * 1e3:>6.2f} ms {paired * 1e6:>7.1f} µs {ratio:>6.1%} {cpu_over * 1e6:>11.1f} µs")


if __name__ == "__main__":
    main()
