"""Agents instrumented with OpenTelemetry the way their users do it, run as child processes by the tests.

    python -m e2e.otel_agents sdk|json|pydantic|openinference|genai

Each exports to `OTEL_EXPORTER_OTLP_ENDPOINT` (the DevTool under test) with the SDK's own OTLP/HTTP
exporter and nothing configured but that variable, then prints the trace id it exported:
- `sdk`: hand-made GenAI spans from `opentelemetry-sdk`, a root left open while its children are
  exported (the test sees the run live), released by a line on stdin;
- `json`: the same spans, sent as OTLP/JSON (the Python exporter speaks protobuf only: the body is
  the exporter's own request in protobuf's JSON mapping, posted as a Collector would);
- `pydantic`: a Pydantic AI agent with a tool, on its `TestModel`, instrumented (`Agent.instrument_all`:
  its own GenAI spans);
- `openinference`: the `openai` SDK instrumented by `openinference-instrumentation-openai`, against the
  fake provider (`OPENAI_BASE_URL`), asking for a tool and then answering; the agent and tool spans
  around it are OpenInference's, as a framework would make them;
- `genai`: the same conversation under the OpenTelemetry project's own OpenAI instrumentation
  (`opentelemetry-instrumentation-openai-v2`), with a logger provider exporting OTLP logs too: by
  default it follows the GenAI conventions of v1.30 (each message an event, sent as a log record),
  and with `OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental` the latest ones (messages on
  the span); the test sets which, and `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.request
from collections.abc import Callable
from typing import Any

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import Status, StatusCode


def provider(exporter: object | None = None) -> TracerProvider:
    made = TracerProvider(resource=Resource.create({"service.name": "e2e-agents"}))
    made.add_span_processor(SimpleSpanProcessor(exporter or OTLPSpanExporter()))  # type: ignore[arg-type]
    return made


def genai_spans(tracer_provider: TracerProvider, *, wait: bool) -> str:
    tracer = tracer_provider.get_tracer("e2e.agents", "1.0")
    with tracer.start_as_current_span("invoke_agent planner") as root:
        root.set_attributes({"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "planner"})
        trace_id = f"{root.get_span_context().trace_id:032x}"
        with tracer.start_as_current_span("chat gpt-4.1-mini") as chat:
            chat.set_attributes(
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "openai",
                    "gen_ai.request.model": "gpt-4.1-mini",
                    "gen_ai.input.messages": json.dumps(
                        [{"role": "user", "parts": [{"type": "text", "content": "Plan a trip to Lyon"}]}]
                    ),
                    "gen_ai.output.messages": json.dumps(
                        [
                            {
                                "role": "assistant",
                                "parts": [
                                    {"type": "tool_call", "id": "c1", "name": "book_train", "arguments": {"to": "Lyon"}}
                                ],
                            }
                        ]
                    ),
                    "gen_ai.usage.input_tokens": 42,
                    "gen_ai.usage.output_tokens": 7,
                }
            )
        with tracer.start_as_current_span("execute_tool book_train") as tool:
            tool.set_attributes(
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "book_train",
                    "gen_ai.tool.call.arguments": json.dumps({"to": "Lyon"}),
                }
            )
            tool.record_exception(TimeoutError("no seats left"))
            tool.set_status(Status(StatusCode.ERROR, "no seats left"))
        if wait:
            print(trace_id, flush=True)
            sys.stdin.readline()  # the test has seen the run live; now end it
    return trace_id


class JsonExporter:
    """Posts what the SDK's exporter would send, in OTLP/JSON, to the endpoint's /v1/traces."""

    def __init__(self) -> None:
        self.url = os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"].rstrip("/") + "/v1/traces"

    def export(self, spans: object) -> object:
        from google.protobuf.json_format import MessageToJson
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
        from opentelemetry.sdk.trace.export import SpanExportResult

        body = MessageToJson(encode_spans(spans)).encode()  # type: ignore[arg-type]
        request = urllib.request.Request(self.url, body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as answer:
            assert json.load(answer) == {}
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None: ...

    def force_flush(self, timeout_millis: int = 0) -> bool:
        return True


def pydantic_agent() -> str:
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from pydantic_ai import Agent
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.test import TestModel

    tracer_provider = provider()
    seen = InMemorySpanExporter()  # to tell the test which trace it was
    tracer_provider.add_span_processor(SimpleSpanProcessor(seen))
    Agent.instrument_all(InstrumentationSettings(tracer_provider=tracer_provider))
    agent = Agent(TestModel(), name="travel_agent", instructions="Book trains.")

    @agent.tool_plain
    def find_train(city: str) -> str:
        return f"the 9:04 to {city}"

    agent.run_sync("Find me a train to Lyon")
    tracer_provider.force_flush()
    return f"{seen.get_finished_spans()[0].context.trace_id:032x}"


ORDER_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup_order",
            "parameters": {"type": "object", "properties": {"order": {"type": "integer"}}},
        },
    }
]


def order_conversation(
    tracer_provider: TracerProvider,
    agent: tuple[str, dict[str, str]],
    tool: Callable[[Any], dict[str, str]],
) -> str:
    """The `openai` SDK (instrumented by the caller) against the fake provider: a question, a tool call, an
    answer, under an agent span (`agent`: its name and attributes) with a span for the tool (`tool(call)`:
    its attributes, from the model's call); the trace id."""
    import openai

    tracer = tracer_provider.get_tracer("e2e.orders", "1.0")
    client = openai.OpenAI()
    messages: list[dict[str, object]] = [
        {"role": "system", "content": "You answer order questions."},
        {"role": "user", "content": "Where is order 7?"},
    ]
    with tracer.start_as_current_span(agent[0], attributes=agent[1]) as root:
        trace_id = f"{root.get_span_context().trace_id:032x}"
        first = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=ORDER_TOOLS)  # type: ignore[arg-type]
        call = first.choices[0].message.tool_calls[0]  # type: ignore[index]
        with tracer.start_as_current_span(call.function.name, attributes=tool(call)):  # type: ignore[union-attr]
            pass
        messages += [
            first.choices[0].message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": "shipped yesterday"},
        ]
        client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=ORDER_TOOLS)  # type: ignore[arg-type]
    return trace_id


def openinference_agent() -> str:
    from openinference.instrumentation.openai import OpenAIInstrumentor

    tracer_provider = provider()
    OpenAIInstrumentor().instrument(tracer_provider=tracer_provider)
    trace_id = order_conversation(
        tracer_provider,
        ("support", {"openinference.span.kind": "AGENT"}),
        lambda call: {
            "openinference.span.kind": "TOOL",
            "tool.name": call.function.name,
            "input.value": call.function.arguments,
            "output.value": "shipped yesterday",
        },
    )
    tracer_provider.force_flush()
    return trace_id


def genai_agent() -> str:
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor

    tracer_provider = provider()
    logger_provider = LoggerProvider(resource=Resource.create({"service.name": "e2e-agents"}))
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(OTLPLogExporter()))
    OpenAIInstrumentor().instrument(  # type: ignore[no-untyped-call]
        tracer_provider=tracer_provider, logger_provider=logger_provider
    )
    trace_id = order_conversation(
        tracer_provider,
        ("invoke_agent support", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support"}),
        lambda call: {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.function.name,
            "gen_ai.tool.call.id": call.id,
            "gen_ai.tool.call.arguments": call.function.arguments,
            "gen_ai.tool.call.result": "shipped yesterday",
        },
    )
    logger_provider.force_flush()
    tracer_provider.force_flush()
    return trace_id


def main(which: str) -> None:
    if which == "sdk":
        genai_spans(provider(), wait=True)
    elif which == "json":
        print(genai_spans(provider(JsonExporter()), wait=False), flush=True)
    elif which == "pydantic":
        print(pydantic_agent(), flush=True)
    elif which == "genai":
        print(genai_agent(), flush=True)
    elif which == "openinference":
        print(openinference_agent(), flush=True)
    else:
        raise SystemExit(f"which agent? sdk, json, pydantic, openinference or genai, not {which!r}")


if __name__ == "__main__":
    main(sys.argv[1])
