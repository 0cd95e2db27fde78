"""Overhead of the SDK instrumentation per request, over the bare SDK call, against the fake provider.

    python bench/bench_instrument.py [--rounds 1000] [--chars 400] [--in-memory]

A real fake provider process (`testkit.fake_provider`) answers every request with the same text
(`--chars` characters; streamed in 8-character chunks, with usage) over loopback HTTP. One `openai.OpenAI`
client (kept-alive connections) makes, in each round and in an order shuffled anew each round (a
fixed order would have each kind always follow the same one, and pay for what that one left, its
garbage and its cold caches), one request of each kind, whole (`chat.completions.create`) and
streamed (`stream=True`, the chunks read and their text joined):
- bare: a second client of the same SDK, same settings, whose class (a subclass of `openai.OpenAI`)
  carries the SDK's own unwrapped `request`: the SDK as if never instrumented, same process, same
  fake provider, same requests, its own kept-alive connections;
- unrecorded: through the wrapper, outside any run (what every request of a process that called
  `install()` pays when it is not being recorded);
- recorded: through the wrapper inside a recorded run (`devtool.record`, events to a JSONL file): the
  turn's events, the content hash, the journal entry, usage and cost, the streamed bytes read as they pass.

With `--in-memory`, the fake provider's two answers are fetched from it once (their bytes, in the
chunks they came in) and every client's http client (`httpx.MockTransport`) hands those back with no
socket: the same SDK code, the same requests and answers, without the loopback round trip and the
server process, whose jitter on a loaded machine is milliseconds, so that the microseconds that are
ours can be seen.

Reported per request, for wall time and for this process's CPU time (what our code costs, less
exposed to the other processes on the cores): the median of each kind, and the median over rounds of
its difference to that round's bare request (paired, so a burst of load falls on both); and the mean
CPU difference (which counts the rare slow request, a garbage collection, that medians skip).
The target is an overhead of at most 50 µs.
"""

from __future__ import annotations

import argparse
import contextvars
import os
import platform
import random
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

# The SDK's http library (this release of the SDKs ships httpx as `httpx2`).
httpx: Any = getattr(openai._base_client, "httpx2", None) or openai._base_client.httpx  # type: ignore[attr-defined]
KEY = "sk-bench-0000000000"
WARMUP = 30  # rounds not counted
MESSAGES = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Describe Lisbon."}]


def measure(
    client: openai.OpenAI, bare_client: openai.OpenAI, rounds: int, trace: Path
) -> dict[str, dict[str, list[float]]]:
    def whole(client: openai.OpenAI) -> Callable[[], str]:
        def ask() -> str:
            completion = client.chat.completions.create(model="gpt-4.1-mini", messages=MESSAGES)
            return completion.choices[0].message.content or ""

        return ask

    def streamed(client: openai.OpenAI) -> Callable[[], str]:
        def ask() -> str:
            stream = client.chat.completions.create(
                model="gpt-4.1-mini", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
            )
            return "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)

        return ask

    outside = contextvars.Context()  # no run in it
    kinds: dict[str, Callable[[], Any]] = {}
    for form, asking in (("whole", whole), ("streamed", streamed)):
        ask = asking(client)
        kinds[f"{form} bare"] = asking(bare_client)
        kinds[f"{form} unrecorded"] = lambda ask=ask: outside.run(ask)
        kinds[f"{form} recorded"] = ask
    times: dict[str, dict[str, list[float]]] = {kind: {"wall": [], "cpu": []} for kind in kinds}
    order, shuffle = list(kinds), random.Random(15).shuffle
    with devtool.record("bench", to=trace):
        for round_ in range(rounds + WARMUP):  # the first rounds warm connections, caches and the server up
            shuffle(order)
            for kind in order:
                wall, cpu = time.perf_counter(), time.process_time()
                kinds[kind]()
                if round_ >= WARMUP:
                    times[kind]["wall"].append(time.perf_counter() - wall)
                    times[kind]["cpu"].append(time.process_time() - cpu)
    return times


def bare_sdk_client() -> type[openai.OpenAI]:
    """`openai.OpenAI` with the SDK's own `request`, as before `devtool.instrument.openai()` wrapped it.
    A subclass attribute, set once: no class attribute changes during the measurement (which would
    empty the type's method cache and slow the calls after it)."""
    wrapped = openai._base_client.SyncAPIClient.request  # type: ignore[attr-defined]
    return type("BareOpenAI", (openai.OpenAI,), {"request": wrapped.__wrapped__})


class Chunks(httpx.SyncByteStream):  # type: ignore[misc]
    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = chunks

    def __iter__(self) -> Any:
        return iter(self._chunks)


def answers_of(url: str) -> Any:
    """A transport that answers as the fake provider at `url` answered once: whole, or streamed."""
    answers = {}
    for streamed in (False, True):
        body = {"model": "gpt-4.1-mini", "messages": MESSAGES, "stream": streamed}
        if streamed:
            body["stream_options"] = {"include_usage": True}
        headers = {"authorization": f"Bearer {KEY}"}
        with httpx.stream("POST", f"{url}/v1/chat/completions", json=body, headers=headers) as response:
            chunks = list(response.iter_raw())
            answers[streamed] = (response.status_code, response.headers["content-type"], chunks)

    def answer(request: Any) -> Any:
        status, content_type, chunks = answers[b'"stream":true' in request.content]
        return httpx.Response(status, headers={"content-type": content_type}, stream=Chunks(chunks))

    return httpx.MockTransport(answer)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--chars", type=int, default=400)
    parser.add_argument("--in-memory", action="store_true", help="the fake provider's answers, with no socket")
    args = parser.parse_args()
    devtool.instrument.openai()
    load_before = os.getloadavg()
    text = ("Lisbon: hills, trams, tiles and tarts. " * (args.chars // 38 + 1))[: args.chars]
    with tempfile.TemporaryDirectory() as folder, FakeProviderProcess.start() as process:
        fake = process.namespace()
        fake.reply({"text": text, "usage": {"input": 30, "output": args.chars // 4}}, times=None)
        settings: dict[str, Any] = {"base_url": f"{process.url}/v1", "api_key": KEY, "max_retries": 0}
        clients = []
        for sdk_class in (openai.OpenAI, bare_sdk_client()):
            if args.in_memory:
                settings["http_client"] = openai.DefaultHttpxClient(transport=answers_of(process.url))
            clients.append(sdk_class(**settings))
        client, bare_client = clients
        trace = Path(folder) / "trace.jsonl"
        times = measure(client, bare_client, args.rounds, trace)
        turns = trace.read_bytes().count(b'"type":"turn:end"')
        # Only the recorded kinds' requests are turns: bare and unrecorded went past the instrumentation.
        assert turns == 2 * (args.rounds + WARMUP), f"{turns} turns recorded for {args.rounds + WARMUP} rounds"
        client.close()
        bare_client.close()
    load_after = os.getloadavg()
    print(f"bench_instrument · {date.today()} · {platform.machine()}, {os.cpu_count()} cores · {args.rounds} rounds")
    print(f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f}")
    print(f"answer: {args.chars} characters, streamed in {-(-args.chars // 8)} chunks")
    print("transport: " + ("in memory (the fake provider's bytes)" if args.in_memory else "loopback HTTP"))
    print(f"{'what':<20} {'wall':>9} {'over bare':>10} {'ratio':>7} {'cpu':>9} {'over bare':>10} {'(mean)':>10}")
    for kind, measured in times.items():
        bare = times[kind.rsplit(" ", 1)[0] + " bare"]
        over = {clock: paired_median(measured[clock], bare[clock]) for clock in ("wall", "cpu")}
        wall, cpu = statistics.median(measured["wall"]), statistics.median(measured["cpu"])
        cpu_mean = statistics.fmean(measured["cpu"]) - statistics.fmean(bare["cpu"])
        ratio = over["wall"] / statistics.median(bare["wall"])
        print(
            f"{kind:<20} {wall * 1e3:>6.2f} ms {over['wall'] * 1e6:>7.1f} µs {ratio:>6.1%} "
            f"{cpu * 1e3:>6.2f} ms {over['cpu'] * 1e6:>7.1f} µs {cpu_mean * 1e6:>7.1f} µs"
        )


def paired_median(measured: list[float], bare: list[float]) -> float:
    """The median over rounds of a kind's time less the same round's bare request's."""
    return statistics.median(m - b for m, b in zip(measured, bare, strict=True))


if __name__ == "__main__":
    main()
