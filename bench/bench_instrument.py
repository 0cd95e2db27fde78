"""Overhead of the SDK instrumentation per request, over the bare SDK call, against the fake provider.

    python bench/bench_instrument.py [--rounds 200] [--block 10] [--chars 400] [--in-memory] [--vary] [--peer]

A real fake provider process (`testkit.fake_provider`) answers every request with the same text
(`--chars` characters; streamed in 8-character chunks, with usage) over loopback HTTP. One
`openai.OpenAI` client (kept-alive connections) makes, in each round and in an order shuffled anew each
round (a fixed order would have each kind always follow the same one, and pay for what that one left,
its garbage and its cold caches), a block of `--block` requests of each kind, whole
(`chat.completions.create`) and streamed (`stream=True`, the chunks read and their text joined):
- bare: a second client of the same SDK, same settings, whose class (a subclass of `openai.OpenAI`)
  carries the SDK's own unwrapped `request`: the SDK as if never instrumented, same process, same
  fake provider, same requests, its own kept-alive connections;
- unrecorded: through the wrapper, outside any run (what every request of a process that called
  `install()` pays when it is not being recorded);
- recorded: through the wrapper inside a recorded run (`devtool.record`, events to a JSONL file): the
  turn's events, the content hash, the journal entry, usage and cost, the streamed bytes read.

A recorded request does on its way only what must happen then (its callId, a copy of its body, its
times) and leaves the rest to its run's emitter, done in batches (`devtool/core/drainer.py`): by the
drainer thread, or when the run's state is read. So a recorded block is timed twice: the request path
(this thread's CPU time while the block's requests are made) and the whole cost (the process's CPU
time while they are made, the drainer's included, plus the settling of what is still pending at the
block's end, also timed: nothing of a block's work is left for the next block to pay). A block of one
(`--block 1`) settles each request alone, as a run whose requests come seconds apart does (there the
drainer does it while the next request waits on its provider); larger blocks, back to back.

With `--in-memory`, the fake provider's two answers are fetched from it once (their bytes, in the
chunks they came in) and every client's http client (`httpx.MockTransport`) hands those back with no
socket: the same SDK code, the same requests and answers, without the loopback round trip and the
server process, whose jitter on a loaded machine is milliseconds. With `--vary`, every request's
messages differ (a counter in the user's message), so each has its own content hash and the run's
journal grows by one entry per recorded request, as a real agent's does.

With `--peer`, the peer a user would install instead is measured side by side (issue 43):
- openinference: `openinference-instrumentation-openai` on a client of its own (its wrapper around
  the SDK's unwrapped `request`, so neither instrumentation sees the other's requests), its spans
  through a `BatchSpanProcessor` and the OTLP/HTTP exporter to a real `devtool serve`; its block's
  whole cost includes `force_flush()`, the export of the block's spans, as ours includes its settling.
and the report ends with ours ÷ the peer's overhead over bare, whole and streamed (the default
`--chars 400` streams 50 chunks); the target is at most a third.

Reported per request: each kind's median, and the median over rounds of its difference to that
round's bare block (paired, so a burst of load falls on both), for the request path and the whole
cost; the same over the first and the last quarter of the rounds (whether the overhead grows with the
run); and the garbage collector's collections per 1,000 requests of each kind, by generation, with
their time. The target is an overhead of at most 50 µs.
"""

from __future__ import annotations

import argparse
import contextlib
import contextvars
import gc
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
from devtool.core.frame import CURRENT_FRAME
from testkit import served
from testkit.fake_provider import FakeProviderProcess

# The SDK's http library (this release of the SDKs ships httpx as `httpx2`).
httpx: Any = getattr(openai._base_client, "httpx2", None) or openai._base_client.httpx  # type: ignore[attr-defined]
KEY = "sk-bench-0000000000"
WARMUP = 10  # rounds not counted
SYSTEM = {"role": "system", "content": "You are terse."}
MESSAGES = [SYSTEM, {"role": "user", "content": "Describe Lisbon."}]
Times = dict[str, list[float]]


class GcCount:
    """The collector's collections and their time, by generation, charged to the kind being timed."""

    def __init__(self, kinds: list[str]) -> None:
        self.kind: str | None = None
        self.counts = {kind: [[0, 0.0] for _ in range(3)] for kind in kinds}
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        elif self.kind is not None:
            count = self.counts[self.kind][info["generation"]]
            count[0] += 1
            count[1] += time.perf_counter() - self._started


def measure(
    client: openai.OpenAI,
    bare_client: openai.OpenAI,
    rounds: int,
    block: int,
    trace: Path,
    vary: bool,
    peer: tuple[openai.OpenAI, Callable[[], Any]] | None = None,
) -> tuple[dict[str, Times], GcCount]:
    counter = iter(range(10**9))

    def messages() -> list[dict[str, str]]:
        return [SYSTEM, {"role": "user", "content": f"Describe Lisbon ({next(counter)})."}] if vary else MESSAGES

    outside = contextvars.Context()  # no run in it
    kinds: dict[str, Callable[[], Any]] = {}
    for form, streamed in (("whole", False), ("streamed", True)):
        ask = asker(client, streamed=streamed, messages=messages)
        kinds[f"{form} bare"] = asker(bare_client, streamed=streamed, messages=messages)
        kinds[f"{form} unrecorded"] = lambda ask=ask: outside.run(ask)
        kinds[f"{form} recorded"] = ask
        if peer is not None:
            kinds[f"{form} openinference"] = asker(peer[0], streamed=streamed, messages=messages)
    times: dict[str, Times] = {kind: {"path": [], "whole": []} for kind in kinds}
    order, shuffle = list(kinds), random.Random(15).shuffle
    collections = GcCount(order)
    with devtool.record("bench", to=trace):
        emitter = CURRENT_FRAME.get().run.emitter
        # An emitter before deferred work (the code this one is compared with) has nothing to settle.
        settle = getattr(emitter, "settle", lambda: None)
        settles = {kind: peer[1] if peer is not None and kind.endswith("openinference") else settle for kind in kinds}
        gc.callbacks.append(collections)
        for round_ in range(rounds + WARMUP):  # the first rounds warm connections, caches and the server up
            shuffle(order)
            for kind in order:
                collections.kind = kind if round_ >= WARMUP else None
                ask = kinds[kind]
                path, cpu = time.thread_time(), time.process_time()
                for _ in range(block):
                    ask()
                path = time.thread_time() - path
                settles[kind]()  # what the block left pending, in its own time
                cpu = time.process_time() - cpu
                if round_ >= WARMUP:
                    times[kind]["path"].append(path / block)
                    times[kind]["whole"].append(cpu / block)
        collections.kind = None
        gc.callbacks.remove(collections)
    return times, collections


def asker(
    client: openai.OpenAI, *, streamed: bool, messages: Callable[[], list[dict[str, str]]] = lambda: MESSAGES
) -> Callable[[], str]:
    """One request of a kind through `client`, its answer's text: whole, or streamed and read to the end."""

    def ask() -> str:
        if not streamed:
            completion = client.chat.completions.create(model="gpt-4.1-mini", messages=messages())  # type: ignore[arg-type]
            return completion.choices[0].message.content or ""
        stream = client.chat.completions.create(
            model="gpt-4.1-mini",
            messages=messages(),  # type: ignore[arg-type]
            stream=True,
            stream_options={"include_usage": True},
        )
        return "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)

    return ask


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


def recorded_answers(url: str) -> dict[bool, tuple[int, str, list[bytes]]]:
    """How the fake provider at `url` answers once, by whether streamed: status, content type and the
    body's chunks as they came."""
    answers = {}
    for streamed in (False, True):
        body = {"model": "gpt-4.1-mini", "messages": MESSAGES, "stream": streamed}
        if streamed:
            body["stream_options"] = {"include_usage": True}
        headers = {"authorization": f"Bearer {KEY}"}
        with httpx.stream("POST", f"{url}/v1/chat/completions", json=body, headers=headers) as response:
            chunks = list(response.iter_raw())
            answers[streamed] = (response.status_code, response.headers["content-type"], chunks)
    return answers


def answers_of(url: str) -> Any:
    """A transport that answers as the fake provider at `url` answered once: whole, or streamed."""
    answers = recorded_answers(url)

    def answer(request: Any) -> Any:
        status, content_type, chunks = answers[b'"stream":true' in request.content]
        return httpx.Response(status, headers={"content-type": content_type}, stream=Chunks(chunks))

    return httpx.MockTransport(answer)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--block", type=int, default=10, help="requests of a kind back to back, per round")
    parser.add_argument("--chars", type=int, default=400)
    parser.add_argument("--in-memory", action="store_true", help="the fake provider's answers, with no socket")
    parser.add_argument("--vary", action="store_true", help="every request's messages differ (the journal grows)")
    parser.add_argument("--peer", action="store_true", help="also openinference-instrumentation-openai, side by side")
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
        with contextlib.ExitStack() as stack:
            peer = None
            if args.peer:
                if args.in_memory:
                    settings["http_client"] = openai.DefaultHttpxClient(transport=answers_of(process.url))
                collector = stack.enter_context(
                    served.serving(Path(folder) / "spans.duckdb", log=Path(folder) / "serve.log")
                )
                peer = openinference_client(settings, collector.url.rstrip("/"))
            times, collections = measure(client, bare_client, args.rounds, args.block, trace, args.vary, peer)
        turns = trace.read_bytes().count(b'"type":"turn:end"')
        # Only the recorded kinds' requests are turns: bare and unrecorded went past the instrumentation.
        expected = 2 * args.block * (args.rounds + WARMUP)
        assert turns == expected, f"{turns} turns recorded for {expected} recorded requests"
        client.close()
        bare_client.close()
    load_after = os.getloadavg()
    print(
        f"bench_instrument · {date.today()} · {platform.machine()}, {os.cpu_count()} cores · "
        f"{args.rounds} rounds of blocks of {args.block}" + (" · every request distinct" if args.vary else "")
    )
    print(f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f}")
    print(f"answer: {args.chars} characters, streamed in {-(-args.chars // 8)} chunks")
    print("transport: " + ("in memory (the fake provider's bytes)" if args.in_memory else "loopback HTTP"))
    print("CPU per request; over bare: the median over rounds of the difference to that round's bare block")
    quarter = max(args.rounds // 4, 1)
    print(
        f"{'what':<22} {'path':>9} {'over bare':>10} {'whole':>9} {'over bare':>10}"
        f" {'1st quarter':>12} {'last quarter':>12}   gc per 1,000 requests (gen 0/1/2, µs per request)"
    )
    requests = args.rounds * args.block / 1000
    for kind, measured in times.items():
        bare = times[kind.rsplit(" ", 1)[0] + " bare"]
        over = {clock: paired_median(measured[clock], bare[clock]) for clock in ("path", "whole")}
        first = paired_median(measured["whole"][:quarter], bare["whole"][:quarter])
        last = paired_median(measured["whole"][-quarter:], bare["whole"][-quarter:])
        counts = collections.counts[kind]
        gcs = "/".join(f"{count / requests:.1f}" for count, _ in counts)
        gc_time = sum(took for _, took in counts) / (requests * 1000) * 1e6
        print(
            f"{kind:<22} {statistics.median(measured['path']) * 1e6:>6.0f} µs {over['path'] * 1e6:>7.1f} µs"
            f" {statistics.median(measured['whole']) * 1e6:>6.0f} µs {over['whole'] * 1e6:>7.1f} µs"
            f" {first * 1e6:>9.1f} µs {last * 1e6:>9.1f} µs   {gcs} ({gc_time:.1f} µs)"
        )
    if args.peer:
        for form in ("whole", "streamed"):
            baseline = times[f"{form} bare"]["whole"]
            ours = paired_median(times[f"{form} recorded"]["whole"], baseline)
            theirs = paired_median(times[f"{form} openinference"]["whole"], baseline)
            print(
                f"{form}: CPU over bare, ours recorded {ours * 1e6:.0f} µs, OpenInference + BatchSpanProcessor +"
                f" OTLP/HTTP {theirs * 1e6:.0f} µs: ours ÷ OpenInference = {ours / theirs:.2f} (target ≤ 0.33)"
            )


def openinference_client(settings: dict[str, Any], collector: str) -> tuple[openai.OpenAI, Callable[[], Any]]:
    """A client instrumented by OpenInference alone, exporting to `collector`; and its flush."""
    import wrapt
    from openinference.instrumentation.openai import OpenAIInstrumentor
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{collector}/v1/traces")))
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    wrapper = vars(openai.OpenAI)["request"]._self_wrapper
    # Back as it was, so ours and the bare client stay untouched: only this client's class carries it.
    instrumentor.uninstrument()
    bare = openai._base_client.SyncAPIClient.request.__wrapped__  # type: ignore[attr-defined]
    sdk_class = type("OpenInferenceOpenAI", (openai.OpenAI,), {"request": wrapt.FunctionWrapper(bare, wrapper)})
    return sdk_class(**settings), provider.force_flush


def paired_median(measured: list[float], bare: list[float]) -> float:
    """The median over rounds of a kind's time less the same round's bare block's."""
    return statistics.median(m - b for m, b in zip(measured, bare, strict=True))


if __name__ == "__main__":
    main()
