"""A realistic OTLP JSON trace file, as the OpenTelemetry Collector's file exporter writes it.

One `ExportTraceServiceRequest` a line, `--batch` spans a line (512: the SDK's batch size), ids in
hex and times as decimal strings, as OTLP/JSON has them. The spans are agent runs of three kinds of
instrumentation, mixed the way a team's services would be:
- GenAI (latest, Pydantic AI's shape, 70% of runs): `invoke_agent` with `chat` turns whose
  `gen_ai.input.messages` grow with the conversation, `execute_tool` spans, and an HTTP client span
  under each turn;
- OpenInference (20%): AGENT, LLM with flattened `llm.input_messages.N.message.*` and token counts,
  TOOL with `input.value`/`output.value`;
- GenAI v1.36 and older (10%): `gen_ai.system` and one event per message plus `gen_ai.choice`.
Some tools fail (status ERROR with an `exception` event). Deterministic for a seed; the file is
written as it is generated, so memory stays flat.

    python bench/gen_otlp.py spans.otlp.jsonl --spans 1000000 --seed 7
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

START_NS = 1_790_000_000_000_000_000
RESOURCE = [
    {"key": "service.name", "value": {"stringValue": "support-agents"}},
    {"key": "telemetry.sdk.language", "value": {"stringValue": "python"}},
    {"key": "telemetry.sdk.name", "value": {"stringValue": "opentelemetry"}},
    {"key": "telemetry.sdk.version", "value": {"stringValue": "1.38.0"}},
    {"key": "deployment.environment", "value": {"stringValue": "staging"}},
]
QUESTIONS = [
    "Why was order {n} refunded twice?",
    "Summarise the shipping delays for region {n}.",
    "Which invoices from batch {n} do not reconcile?",
    "Draft a reply to ticket {n} about the warranty.",
]
TOOLS = ["search_orders", "fetch_invoice", "calculator", "lookup_customer"]

Span = dict[str, Any]


def _attr(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    if isinstance(value, list):
        return {"key": key, "value": {"arrayValue": {"values": [{"stringValue": v} for v in value]}}}
    return {"key": key, "value": {"stringValue": value}}


class Run:
    """The spans of one agent run, each with its times; `spans()` yields them in end order (as exported)."""

    def __init__(self, rng: random.Random, number: int, start_ns: int) -> None:
        self.rng = rng
        self.number = number
        self.trace_id = f"{rng.getrandbits(128):032x}"
        self.clock = start_ns
        self.out: list[Span] = []

    def span_id(self) -> str:
        return f"{self.rng.getrandbits(64) | 1:016x}"

    def span(self, parent: str, name: str, start: int, end: int, attributes: list[dict[str, Any]], **more: Any) -> str:
        span_id = self.span_id()
        span: Span = {
            "traceId": self.trace_id,
            "spanId": span_id,
            "parentSpanId": parent,
            "name": name,
            "kind": more.pop("kind", 1),
            "startTimeUnixNano": str(start),
            "endTimeUnixNano": str(end),
            "attributes": attributes,
            "status": more.pop("status", {}),
        }
        span.update(more)
        self.out.append(span)
        return span_id

    def tick(self, low_ms: float, high_ms: float) -> int:
        self.clock += int(self.rng.uniform(low_ms, high_ms) * 1_000_000)
        return self.clock


def genai_run(run: Run) -> None:
    rng = run.rng
    agent = f"agent-{run.number % 7}"
    root_start = run.clock
    root = run.span_id()
    question = rng.choice(QUESTIONS).format(n=run.number)
    messages: list[dict[str, Any]] = [{"role": "user", "parts": [{"type": "text", "content": question}]}]
    for turn in range(rng.randint(2, 4)):
        start = run.tick(1, 5)
        end = run.tick(200, 900)
        last = turn > 0 and rng.random() < 0.4
        if last:
            answer = {"role": "assistant", "parts": [{"type": "text", "content": f"Answer for run {run.number}."}]}
        else:
            tool = rng.choice(TOOLS)
            call_id = f"call_{run.number}_{turn}"
            answer = {
                "role": "assistant",
                "parts": [{"type": "tool_call", "id": call_id, "name": tool, "arguments": {"q": question[:20]}}],
            }
        attributes = [
            _attr("gen_ai.operation.name", "chat"),
            _attr("gen_ai.provider.name", "openai"),
            _attr("gen_ai.request.model", "gpt-4.1-mini"),
            _attr("gen_ai.agent.name", agent),
            _attr("gen_ai.system_instructions", orjson.dumps([{"type": "text", "content": "Be precise."}]).decode()),
            _attr("gen_ai.input.messages", orjson.dumps(messages).decode()),
            _attr("gen_ai.output.messages", orjson.dumps([answer]).decode()),
            _attr("gen_ai.usage.input_tokens", 40 + 30 * len(messages)),
            _attr("gen_ai.usage.output_tokens", rng.randint(5, 60)),
            _attr("gen_ai.response.finish_reasons", ["stop" if last else "tool_calls"]),
        ]
        chat = run.span(root, "chat gpt-4.1-mini", start, end, attributes, kind=3)
        run.span(
            chat,
            "POST",
            start + 1_000_000,
            end - 1_000_000,
            [_attr("http.request.method", "POST"), _attr("url.full", "https://api.example/v1/chat/completions")],
            kind=3,
        )
        messages.append(answer)
        if last:
            break
        tool_start = run.tick(1, 3)
        tool_end = run.tick(5, 80)
        failed = rng.random() < 0.05
        result = f"{tool} found {rng.randint(0, 9)} rows"
        tool_attributes = [
            _attr("gen_ai.operation.name", "execute_tool"),
            _attr("gen_ai.tool.name", tool),
            _attr("gen_ai.tool.call.id", call_id),
            _attr("gen_ai.tool.call.arguments", orjson.dumps({"q": question[:20]}).decode()),
            _attr("gen_ai.agent.name", agent),
        ]
        extra: dict[str, Any] = {}
        if failed:
            extra["status"] = {"code": 2, "message": f"{tool} timed out"}
            extra["events"] = [
                {
                    "timeUnixNano": str(tool_end),
                    "name": "exception",
                    "attributes": [
                        _attr("exception.type", "TimeoutError"),
                        _attr("exception.message", f"{tool} timed out"),
                        _attr("exception.stacktrace", "Traceback (most recent call last):\n  ...\nTimeoutError"),
                    ],
                }
            ]
        else:
            tool_attributes.append(_attr("gen_ai.tool.call.result", result))
        run.span(root, f"execute_tool {tool}", tool_start, tool_end, tool_attributes, **extra)
        messages.append({"role": "tool", "parts": [{"type": "tool_call_response", "id": call_id, "response": result}]})
    end = run.tick(1, 3)
    run.out.append(
        {
            "traceId": run.trace_id,
            "spanId": root,
            "name": f"invoke_agent {agent}",
            "kind": 1,
            "startTimeUnixNano": str(root_start),
            "endTimeUnixNano": str(end),
            "attributes": [
                _attr("gen_ai.operation.name", "invoke_agent"),
                _attr("gen_ai.agent.name", agent),
                _attr("final_result", f"Answer for run {run.number}."),
            ],
            "status": {},
        }
    )


def openinference_run(run: Run) -> None:
    rng = run.rng
    root_start = run.clock
    root = run.span_id()
    question = rng.choice(QUESTIONS).format(n=run.number)
    for turn in range(rng.randint(1, 3)):
        start = run.tick(1, 5)
        end = run.tick(150, 700)
        attributes = [
            _attr("openinference.span.kind", "LLM"),
            _attr("llm.model_name", "gpt-4o-mini"),
            _attr("llm.provider", "openai"),
            _attr("llm.input_messages.0.message.role", "system"),
            _attr("llm.input_messages.0.message.content", "You answer support questions."),
            _attr("llm.input_messages.1.message.role", "user"),
            _attr("llm.input_messages.1.message.content", question),
            _attr("llm.output_messages.0.message.role", "assistant"),
            _attr("llm.output_messages.0.message.content", f"Turn {turn} of run {run.number}."),
            _attr("llm.token_count.prompt", rng.randint(30, 400)),
            _attr("llm.token_count.completion", rng.randint(5, 80)),
            _attr("input.value", orjson.dumps({"messages": [{"role": "user", "content": question}]}).decode()),
            _attr("input.mime_type", "application/json"),
        ]
        run.span(root, "ChatCompletion", start, end, attributes, kind=3)
        tool = rng.choice(TOOLS)
        run.span(
            root,
            tool,
            run.tick(1, 3),
            run.tick(5, 60),
            [
                _attr("openinference.span.kind", "TOOL"),
                _attr("tool.name", tool),
                _attr("input.value", orjson.dumps({"q": question[:16]}).decode()),
                _attr("output.value", f"{rng.randint(0, 9)} results"),
            ],
        )
    run.out.append(
        {
            "traceId": run.trace_id,
            "spanId": root,
            "name": "support-agent",
            "kind": 1,
            "startTimeUnixNano": str(root_start),
            "endTimeUnixNano": str(run.tick(1, 3)),
            "attributes": [
                _attr("openinference.span.kind", "AGENT"),
                _attr("agent.name", "support-agent"),
                _attr("input.value", question),
                _attr("output.value", "done"),
            ],
        }
    )


def legacy_run(run: Run) -> None:
    rng = run.rng
    question = rng.choice(QUESTIONS).format(n=run.number)
    start = run.clock
    end = run.tick(200, 800)
    events = [
        {"timeUnixNano": str(start), "name": "gen_ai.system.message", "attributes": [_attr("content", "Be brief.")]},
        {"timeUnixNano": str(start), "name": "gen_ai.user.message", "attributes": [_attr("content", question)]},
        {
            "timeUnixNano": str(end),
            "name": "gen_ai.choice",
            "attributes": [
                _attr("index", 0),
                _attr("finish_reason", "stop"),
                _attr("message", orjson.dumps({"role": "assistant", "content": "Brief answer."}).decode()),
            ],
        },
    ]
    attributes = [
        _attr("gen_ai.system", "openai"),
        _attr("gen_ai.request.model", "gpt-3.5-turbo"),
        _attr("gen_ai.usage.prompt_tokens", rng.randint(10, 200)),
        _attr("gen_ai.usage.completion_tokens", rng.randint(3, 40)),
    ]
    run.span("", "openai.chat", start, end, attributes, kind=3, events=events)


def runs(seed: int) -> Iterator[Span]:
    rng = random.Random(seed)
    number = 0
    clock = START_NS
    while True:
        run = Run(rng, number, clock)
        pick = rng.random()
        (genai_run if pick < 0.7 else openinference_run if pick < 0.9 else legacy_run)(run)
        yield from run.out
        number += 1
        clock += 50_000_000


def generate(path: Path, *, spans: int, seed: int = 0, batch: int = 512) -> int:
    """Write `spans` spans to `path`, `batch` a line; returns the file's size in bytes."""
    size = 0
    source = runs(seed)
    with path.open("wb") as out:
        written = 0
        while written < spans:
            count = min(batch, spans - written)
            chunk = [next(source) for _ in range(count)]
            scope = {"scope": {"name": "pydantic-ai", "version": "2.68.0"}, "spans": chunk}
            line = orjson.dumps({"resourceSpans": [{"resource": {"attributes": RESOURCE}, "scopeSpans": [scope]}]})
            out.write(line + b"\n")
            size += len(line) + 1
            written += count
    return size


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--spans", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch", type=int, default=512)
    args = parser.parse_args(argv)
    began = time.perf_counter()
    size = generate(args.path, spans=args.spans, seed=args.seed, batch=args.batch)
    print(f"wrote {args.path}: {args.spans:,} spans, {size / 1e6:,.0f} MB in {time.perf_counter() - began:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
