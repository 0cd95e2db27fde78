"""Overhead of the model adapters per request, over the bare SDK call, against the fake provider.

    python bench/bench_models.py [--rounds 1500] [--chars 400]

A real fake provider process (`testkit.fake_provider`) answers every request with the same streamed
text (`--chars` characters, in 8-character chunks, with usage) over loopback HTTP. For each API, on
one SDK client (one event loop, kept-alive connections), each round makes one request of each kind,
in an order that rotates from round to round:
- bare: the SDK's own streaming call, its chunks read and the text joined, what any caller does;
- adapter: `OpenAIChatModel.call` / `AnthropicModel.call` on the same client, with a `progress`
  callback: message translation, the stream read into our message, usage, cost, the reply dict;
- prompt: a whole `prompt()` turn through the runtime in a fresh `run_with` (its events to a JSONL
  file, the content hash, the journal, `turn:progress` events), for reference.

Reported per request: the median wall time of each kind, the median over rounds of the difference
to that round's bare request (paired, so a burst of load on the shared two cores falls on both), and
this process's CPU time (what our code costs, whatever the server and the machine's other work do).
The target is an overhead of at most 200 µs or 5%.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import date
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import anthropic
import openai

from devtool.core import JsonlSink, create_agent, prompt, run_with
from devtool.core.providers.anthropic_messages import AnthropicModel
from devtool.core.providers.openai_chat import OpenAIChatModel
from testkit.fake_provider import FakeProviderProcess

KEY = "sk-bench-0000000000"
MESSAGES = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Describe Lisbon."}]


async def bare_openai(client: openai.AsyncOpenAI) -> str:
    stream = await client.chat.completions.create(
        model="gpt-4.1-mini", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
    )
    pieces = []
    async for chunk in stream:
        for choice in chunk.choices:
            if choice.delta.content:
                pieces.append(choice.delta.content)
    return "".join(pieces)


async def bare_anthropic(client: anthropic.AsyncAnthropic) -> str:
    stream = await client.messages.create(
        model="claude-haiku-4-5", max_tokens=1024, system="You are terse.", stream=True,
        messages=[{"role": "user", "content": "Describe Lisbon."}],
    )  # fmt: skip
    pieces = []
    async for event in stream:
        if event.type == "content_block_delta" and event.delta.type == "text_delta":
            pieces.append(event.delta.text)
    return "".join(pieces)


async def measure(api: str, url: str, rounds: int, trace: Path) -> dict[str, dict[str, list[float]]]:
    if api == "openai":
        client: Any = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key=KEY, max_retries=0)
        adapter: Any = OpenAIChatModel("gpt-4.1-mini", client=client)
        bare: Callable[[], Awaitable[Any]] = lambda: bare_openai(client)  # noqa: E731
    else:
        client = anthropic.AsyncAnthropic(base_url=url, api_key=KEY, max_retries=0)
        adapter = AnthropicModel("claude-haiku-4-5", client=client, max_tokens=1024)
        bare = lambda: bare_anthropic(client)  # noqa: E731
    pieces: list[str] = []

    async def through_adapter() -> Any:
        pieces.clear()
        return await adapter.call(MESSAGES, schema=None, tools=[], progress=pieces.append)

    agent = create_agent("bench", lambda props: prompt(list(MESSAGES)), model=adapter)
    sink = JsonlSink(trace)

    async def through_prompt() -> Any:
        # A fresh run each time, so the turn is asked for real, never served from a journal.
        return await run_with(lambda: agent(None), sinks=[sink])

    kinds = {"bare": bare, "adapter": through_adapter, "prompt": through_prompt}
    times: dict[str, dict[str, list[float]]] = {kind: {"wall": [], "cpu": []} for kind in kinds}
    order = list(kinds)
    for round_ in range(rounds + 30):  # the first 30 rounds warm connections, caches and the server up
        order = order[1:] + order[:1]
        for kind in order:
            wall, cpu = time.perf_counter(), time.process_time()
            await kinds[kind]()
            if round_ >= 30:
                times[kind]["wall"].append(time.perf_counter() - wall)
                times[kind]["cpu"].append(time.process_time() - cpu)
    sink.close()
    await client.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=1500)
    parser.add_argument("--chars", type=int, default=400)
    args = parser.parse_args()
    load_before = os.getloadavg()
    text = ("Lisbon: hills, trams, tiles and tarts. " * (args.chars // 38 + 1))[: args.chars]
    rows = []
    with tempfile.TemporaryDirectory() as folder, FakeProviderProcess.start() as process:
        fake = process.namespace()
        fake.reply({"text": text, "usage": {"input": 30, "output": args.chars // 4}}, times=None)
        for api in ("openai", "anthropic"):
            times = asyncio.run(measure(api, process.url, args.rounds, Path(folder) / f"{api}.jsonl"))
            bare = times["bare"]
            for kind, measured in times.items():
                paired = statistics.median(w - b for w, b in zip(measured["wall"], bare["wall"], strict=True))
                wall = statistics.median(measured["wall"])
                cpu = statistics.fmean(measured["cpu"])
                cpu_over = cpu - statistics.fmean(bare["cpu"])
                rows.append((api, kind, wall, paired, paired / statistics.median(bare["wall"]), cpu, cpu_over))
    load_after = os.getloadavg()
    print(f"bench_models · {date.today()} · {platform.machine()}, {os.cpu_count()} cores · {args.rounds} rounds")
    print(f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f}")
    print(f"answer: {args.chars} characters streamed in {-(-args.chars // 8)} chunks")
    print(f"{'api':<10} {'what':<8} {'wall':>9} {'over bare':>10} {'ratio':>7} {'cpu':>9} {'cpu over':>9}")
    for api, kind, wall, over, ratio, cpu, cpu_over in rows:
        print(
            f"{api:<10} {kind:<8} {wall * 1e3:>6.2f} ms {over * 1e6:>7.0f} µs {ratio:>6.1%} "
            f"{cpu * 1e3:>6.2f} ms {cpu_over * 1e6:>6.0f} µs"
        )


if __name__ == "__main__":
    main()
