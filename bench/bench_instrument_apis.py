"""Our own CPU per recorded SDK request, for each API, sync and async, whole and streamed.

    python bench/bench_instrument_apis.py [--requests 400] [--repeat 3] [--profile chat-sync-streamed]

`bench_instrument.py` measures one API (Chat Completions, sync) against the bare SDK; this one covers
the nine forms issue 15 instruments: OpenAI Chat Completions, OpenAI Responses and Anthropic Messages,
each sync and async, whole and `stream=True`. The fake provider (a real process) answers each form once;
its bytes, in the chunks they came in, are then handed back by an in-memory transport
(`httpx.MockTransport`), so the SDK's code runs as it does against the provider, without the socket
and the server process, whose jitter on a shared machine is milliseconds.

Each form runs `--requests` requests recorded (inside `devtool.record`, events to a JSONL file) and as
many unrecorded (the same wrapped client outside any run: one ContextVar read), alternating in blocks
of 20; `--repeat` times. Reported: the CPU time of this process per request, recorded less unrecorded,
the median over repetitions (what the recording costs: events, hashing, the journal, pricing, reading
the streamed bytes). With `--profile FORM`, a cProfile of FORM's recorded requests instead, our own
functions first. With `--parts`, our code alone, with no SDK around it: a recorded whole Chat Completions
request's steps (as the wrapper makes them, on the fake provider's answer) `--requests` × 10 times in a
loop, each step timed, medians: what our code costs when its caches are warm.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextvars
import cProfile
import os
import platform
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any, ClassVar

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import anthropic
import openai

import devtool
import devtool.instrument
from devtool.core.frame import CURRENT_FRAME
from devtool.instrument.chat_completions import ChatCompletions
from devtool.instrument.exchange import Exchange
from devtool.instrument.stainless import _body
from testkit.fake_provider import FakeProviderProcess

httpx: Any = getattr(openai._base_client, "httpx2", None) or openai._base_client.httpx  # type: ignore[attr-defined]
KEY = "sk-bench-0000000000"
HI = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Describe Lisbon."}]
KINDS = ("chat", "responses", "messages")
BLOCK = 20


def ask(kind: str, client: Any, streamed: bool) -> Any:
    if kind == "chat":
        usage = {"stream_options": {"include_usage": True}} if streamed else {}
        return client.chat.completions.create(model="gpt-4.1-mini", messages=HI, stream=streamed, **usage)
    if kind == "responses":
        return client.responses.create(model="gpt-4.1-mini", input="Describe Lisbon.", stream=streamed)
    return client.messages.create(model="claude-haiku-4-5", max_tokens=256, messages=HI, stream=streamed)


def read_sync(result: Any, streamed: bool) -> None:
    if streamed:
        for _ in result:
            pass


async def read_async(result: Any, streamed: bool) -> None:
    result = await result
    if streamed:
        async for _ in result:
            pass


class Chunks(httpx.SyncByteStream, httpx.AsyncByteStream):  # type: ignore[misc]
    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = chunks

    def __iter__(self) -> Any:
        return iter(self._chunks)

    async def __aiter__(self) -> Any:
        for chunk in self._chunks:
            yield chunk


def captured(process: FakeProviderProcess) -> dict[tuple[str, bool], tuple[int, str, list[bytes]]]:
    """Each form's answer, as the fake provider gave it: status, content type, chunks."""
    fake = process.namespace()
    answers = {}
    for kind in KINDS:
        for streamed in (False, True):
            seen: list[Any] = []

            def keep(request: Any, seen: list[Any] = seen) -> Any:
                with httpx.Client() as real:
                    sent = real.send(
                        real.build_request(
                            request.method, request.url, headers=request.headers, content=request.content
                        ),
                        stream=True,
                    )
                    seen.append((sent.status_code, sent.headers["content-type"], list(sent.iter_raw())))
                    sent.close()
                status, content_type, chunks = seen[-1]
                return httpx.Response(status, headers={"content-type": content_type}, stream=Chunks(chunks))

            client = make_client(kind, fake, False, httpx.MockTransport(keep))
            read_sync(ask(kind, client, streamed), streamed)
            answers[(kind, streamed)] = seen[0]
    return answers


def make_client(kind: str, fake: Any, asynchronous: bool, transport: Any) -> Any:
    if kind == "messages":
        sdk, base_url = anthropic, fake.anthropic_base_url
        sdk_class = anthropic.AsyncAnthropic if asynchronous else anthropic.Anthropic
    else:
        sdk, base_url = openai, fake.openai_base_url
        sdk_class = openai.AsyncOpenAI if asynchronous else openai.OpenAI
    http = (sdk.DefaultAsyncHttpxClient if asynchronous else sdk.DefaultHttpxClient)(transport=transport)
    return sdk_class(base_url=base_url, api_key=KEY, max_retries=0, http_client=http)


def in_memory(answer: tuple[int, str, list[bytes]]) -> Any:
    status, content_type, chunks = answer

    def reply(request: Any) -> Any:
        return httpx.Response(status, headers={"content-type": content_type}, stream=Chunks(chunks))

    return httpx.MockTransport(reply)


def forms(answers: dict[tuple[str, bool], Any], fake: Any) -> dict[str, tuple[Any, Callable[[int], None]]]:
    """Each form's name, its client, and a function making n requests of it (sync or async)."""
    made = {}
    for kind in KINDS:
        for asynchronous in (False, True):
            for streamed in (False, True):
                name = f"{kind}-{'async' if asynchronous else 'sync'}-{'streamed' if streamed else 'whole'}"
                client = make_client(kind, fake, asynchronous, in_memory(answers[(kind, streamed)]))
                if asynchronous:
                    loop = asyncio.new_event_loop()

                    async def many_async(
                        n: int, kind: str = kind, client: Any = client, streamed: bool = streamed
                    ) -> None:
                        for _ in range(n):
                            await read_async(ask(kind, client, streamed), streamed)

                    def run(n: int, many_async: Any = many_async, loop: Any = loop) -> None:
                        loop.run_until_complete(many_async(n))
                else:

                    def run(n: int, kind: str = kind, client: Any = client, streamed: bool = streamed) -> None:
                        for _ in range(n):
                            read_sync(ask(kind, client, streamed), streamed)

                made[name] = (client, run)
    return made


class Options:
    """A Chat Completions request's options, as the wrapper reads them."""

    json_data: ClassVar[dict[str, Any]] = {"model": "gpt-4.1-mini", "messages": HI}
    extra_json = None


def parts(content: bytes, n: int, trace: Path) -> None:
    """Each part of a recorded whole request with no SDK around it (see the module docstring)."""
    api, taken, clock = ChatCompletions(), collections.defaultdict(list), time.perf_counter
    with devtool.record("parts", to=trace):
        frame = CURRENT_FRAME.get()
        emitter = frame.run.emitter
        for index in range(n + 500):  # the first 500 warm up
            started = clock()
            exchange = Exchange(frame, api, _body(Options.json_data, ()), False, "gpt-4.1-mini")  # type: ignore[arg-type]
            exchange.recorded()
            exchange.ask()
            asked = clock()
            exchange.answered(200, content)
            answered = clock()
            emitter.settle()
            settled = clock()
            if index >= 500:
                taken["request path: body copy, callId, journal lookup, times"].append(asked - started)
                taken["request path: the answer handed over"].append(answered - asked)
                taken["deferred: events, hash, answer read, priced, counted, journaled"].append(settled - answered)
    print(f"our code alone, warm, per recorded whole request (median of {n}):")
    for step, times in taken.items():
        print(f"  {step:<65} {statistics.median(times) * 1e6:6.1f} µs")
    print(f"  {'total':<65} {sum(statistics.median(times) for times in taken.values()) * 1e6:6.1f} µs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", help="a form's name (e.g. chat-sync-streamed): cProfile its recorded requests")
    parser.add_argument("--only", help="only the forms whose name contains this")
    parser.add_argument("--parts", action="store_true", help="our code alone, step by step (see above)")
    args = parser.parse_args()
    devtool.instrument.install()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as folder, FakeProviderProcess.start() as process:
        fake = process.namespace()
        fake.reply(
            {"text": ("Lisbon: hills, trams, tiles and tarts. " * 11)[:400], "usage": {"input": 30, "output": 100}},
            times=None,
        )
        answers = captured(process)
        if args.parts:
            parts(answers[("chat", False)][2][0], args.requests * 10, Path(folder) / "parts.jsonl")
            return
        made = forms(answers, fake)
        outside = contextvars.Context()
        trace = Path(folder) / "trace.jsonl"
        if args.profile:
            _, run = made[args.profile]
            with devtool.record("bench", to=trace):
                run(50)
                profiler = cProfile.Profile()
                profiler.enable()
                run(args.requests)
                profiler.disable()
            stats = pstats.Stats(profiler)
            stats.sort_stats("tottime").print_stats(r"devtool|orjson|hashlib|posix", 45)
            stats.sort_stats("cumulative").print_stats(r"devtool", 40)
            return
        results: dict[str, list[float]] = {name: [] for name in made if not args.only or args.only in name}
        with devtool.record("bench", to=trace):
            for name in results:  # warm up
                run = made[name][1]
                run(30)
                outside.run(run, 30)
            for _ in range(args.repeat):
                for name in results:
                    run = made[name][1]
                    recorded = unrecorded = 0.0
                    for _ in range(args.requests // BLOCK):
                        cpu = time.process_time()
                        run(BLOCK)
                        recorded += time.process_time() - cpu
                        cpu = time.process_time()
                        outside.run(run, BLOCK)
                        unrecorded += time.process_time() - cpu
                    n = args.requests // BLOCK * BLOCK
                    results[name].append((recorded - unrecorded) / n)
    load_after = os.getloadavg()
    print(f"bench_instrument_apis · {date.today()} · {platform.machine()}, {os.cpu_count()} cores")
    loads = f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f}"
    print(f"{args.requests} requests × {args.repeat} · {loads}")
    print(f"{'form':<28} {'recorded - unrecorded CPU per request (median; each repetition)'}")
    for name, overs in results.items():
        each = " ".join(f"{over * 1e6:6.0f}" for over in overs)
        print(f"{name:<28} {statistics.median(overs) * 1e6:6.0f} µs   [{each}]")


if __name__ == "__main__":
    main()
