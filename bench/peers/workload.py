"""The peers bench's workload: GenAI agent traces made with the OpenTelemetry SDK and encoded by its OTLP
exporter's encoder, saved once as the protobuf bodies an exporter would post.

A trace is an agent run as Pydantic AI's GenAI instrumentation shapes it: `invoke_agent` over three
`chat` spans (system instructions, the user's question and the turn's history in
`gen_ai.input.messages`, ~1-2 KB; the answer in `gen_ai.output.messages`) and two `execute_tool`
spans. One trace in a hundred has the word `WORD` in its last answer (the content search looks for it).
Three sets, each a file of bodies (`<name>.bodies`: 4-byte length, then the body) and its facts
(`<name>.json`):
- `ingest`: `--spans` spans in such traces, in bodies of 512 spans in end order (the SDK's
  `BatchSpanProcessor`'s batch);
- `probes`: `PROBES` single traces, a body each, for the time to visible of one small trace;
- `busy`: as many more, other traces, posted one at a time while the ingest runs (the time to visible
  of one small trace under that load);
- `big`: one trace of 10,000 spans (a root and its children), in bodies of 512.
"""

from __future__ import annotations

import json
import random
import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

WORD = "quokkaberry"  # in 1% of answers, and nowhere else
BATCH = 512
PROBES = 40
SINGLES = ("probes", "busy")  # the sets of single traces, a body each
BIG_SPANS = 10_000
SPANS_PER_TRACE = 6
FILLER = (
    "Order history: the customer placed the order on the 3rd, paid by card, and asked for express "
    "delivery to the warehouse address on file. The carrier scanned the parcel twice at the depot. "
)


@dataclass(frozen=True)
class Workload:
    """One saved set: its bodies and what is in them."""

    bodies: list[bytes]
    spans: int
    trace_ids: list[str]  # hex, in the order their roots were posted
    word_traces: int  # traces whose answer has WORD


def _messages(rng: random.Random, number: int, turn: int) -> tuple[str, str]:
    question = f"Why was order {number} refunded twice? Turn {turn}."
    history: list[dict[str, Any]] = [{"role": "user", "parts": [{"type": "text", "content": question}]}]
    for earlier in range(turn):
        history.append(
            {"role": "tool", "parts": [{"type": "tool_call_response", "id": f"c{earlier}", "response": FILLER}]}
        )
    size = rng.randint(1000, 2000) - sum(len(FILLER) for _ in range(turn))
    history[0]["parts"][0]["content"] += " " + (FILLER * (max(size, 200) // len(FILLER) + 1))[: max(size, 200)]
    return json.dumps([{"type": "text", "content": "You are a precise support agent."}]), json.dumps(history)


def _trace(tracer: Any, rng: random.Random, number: int, clock: int, word: bool) -> int:
    """Make one agent run's six spans (the SDK hands them to its processor as each ends); its end time."""
    from opentelemetry import trace

    agent = f"agent-{number % 7}"
    root = tracer.start_span(
        f"invoke_agent {agent}",
        start_time=clock,
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent},
    )
    parent = trace.set_span_in_context(root)
    for turn in range(3):
        start = clock + (turn * 400 + 1) * 1_000_000
        system, history = _messages(rng, number, turn)
        last = turn == 2
        answer = f"Run {number}: the refund was issued twice because the retry did not see the first one."
        if last and word:
            answer += f" See {WORD} for details."
        chat = tracer.start_span(
            "chat gpt-4.1-mini",
            context=parent,
            kind=trace.SpanKind.CLIENT,
            start_time=start,
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": "openai",
                "gen_ai.request.model": "gpt-4.1-mini",
                "gen_ai.agent.name": agent,
                "gen_ai.system_instructions": system,
                "gen_ai.input.messages": history,
                "gen_ai.output.messages": json.dumps(
                    [{"role": "assistant", "parts": [{"type": "text", "content": answer}]}]
                ),
                "gen_ai.usage.input_tokens": 400 + 100 * turn,
                "gen_ai.usage.output_tokens": rng.randint(10, 90),
                "gen_ai.response.finish_reasons": ["stop" if last else "tool_calls"],
            },
        )
        chat.end(end_time=start + 300_000_000)
        if not last:
            tool = tracer.start_span(
                "execute_tool search_orders",
                context=parent,
                start_time=start + 310_000_000,
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "search_orders",
                    "gen_ai.tool.call.id": f"c{turn}",
                    "gen_ai.tool.call.arguments": json.dumps({"order": number}),
                    "gen_ai.tool.call.result": f"{rng.randint(1, 9)} rows",
                },
            )
            tool.end(end_time=start + 380_000_000)
    end = clock + 1_300_000_000
    root.end(end_time=end)
    return end


def _big(tracer: Any, clock: int) -> None:
    """One trace of BIG_SPANS spans: a root and its chat children."""
    from opentelemetry import trace

    root = tracer.start_span("invoke_agent big", start_time=clock, attributes={"gen_ai.operation.name": "invoke_agent"})
    parent = trace.set_span_in_context(root)
    for n in range(BIG_SPANS - 1):
        start = clock + (n + 1) * 1_000_000
        span = tracer.start_span(
            "chat gpt-4.1-mini",
            context=parent,
            start_time=start,
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4.1-mini",
                "gen_ai.output.messages": json.dumps(
                    [{"role": "assistant", "parts": [{"type": "text", "content": f"Step {n}."}]}]
                ),
            },
        )
        span.end(end_time=start + 900_000)
    root.end(end_time=clock + (BIG_SPANS + 1) * 1_000_000)


def _encode(spans: list[Any]) -> list[bytes]:
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    return [encode_spans(spans[at : at + BATCH]).SerializeToString() for at in range(0, len(spans), BATCH)]


def _make(name: str, spans: int) -> tuple[list[bytes], list[str], int]:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "support-agents"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("pydantic-ai", "2.68.0")
    rng = random.Random(43)
    clock = time.time_ns() - 3600 * 10**9
    if name == "big":
        _big(tracer, clock)
        ended = list(exporter.get_finished_spans())
        return _encode(ended), [f"{ended[-1].context.trace_id:032x}"], 0
    bodies: list[bytes] = []
    trace_ids: list[str] = []
    words = 0
    for number in range(max(spans // SPANS_PER_TRACE, 1)):
        word = number % 100 == 50
        words += word
        clock = _trace(tracer, rng, number, clock, word) + 1_000_000
        if name in SINGLES:  # a body a trace
            bodies.extend(_encode(list(exporter.get_finished_spans())))
            exporter.clear()
    ended = list(exporter.get_finished_spans())
    if name == "ingest":
        bodies = _encode(ended)
    roots = [span for span in ended if span.parent is None] if name == "ingest" else []
    trace_ids = [f"{span.context.trace_id:032x}" for span in roots]
    if name in SINGLES:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

        for body in bodies:
            request = ExportTraceServiceRequest.FromString(body)
            trace_ids.append(request.resource_spans[0].scope_spans[0].spans[0].trace_id.hex())
    return bodies, trace_ids, words


def load(folder: Path, name: str, spans: int) -> Workload:
    """The set `name` (`ingest`, `probes`, `busy`, `big`) of `spans` spans, made and saved on first use."""
    stem = folder / (f"{name}-{spans}" if name == "ingest" else name)
    facts_path, bodies_path = stem.with_suffix(".json"), stem.with_suffix(".bodies")
    if not facts_path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        began = time.perf_counter()
        bodies, trace_ids, words = _make(
            name, spans if name == "ingest" else PROBES * SPANS_PER_TRACE if name in SINGLES else BIG_SPANS
        )
        with bodies_path.open("wb") as out:
            for body in bodies:
                out.write(struct.pack(">I", len(body)) + body)
        made = {"spans": _count(bodies), "trace_ids": trace_ids, "word_traces": words}
        facts_path.write_text(json.dumps(made))
        took = time.perf_counter() - began
        print(f"workload {name}: {made['spans']:,} spans in {len(bodies)} bodies, made in {took:.1f} s")
    facts = json.loads(facts_path.read_text())
    return Workload(list(_read(bodies_path)), facts["spans"], facts["trace_ids"], facts["word_traces"])


def _count(bodies: list[bytes]) -> int:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    return sum(
        len(scope.spans)
        for body in bodies
        for resource in ExportTraceServiceRequest.FromString(body).resource_spans
        for scope in resource.scope_spans
    )


def _read(path: Path) -> Iterator[bytes]:
    data = path.read_bytes()
    at = 0
    while at < len(data):
        (size,) = struct.unpack_from(">I", data, at)
        yield data[at + 4 : at + 4 + size]
        at += 4 + size
