"""Agents instrumented with OpenTelemetry the way their users do it, run as child processes by the tests.

    python -m e2e.otel_agents sdk|json|pydantic|openinference

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
  around it are OpenInference's, as a framework would make them.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.request

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


def openinference_agent() -> str:
    import openai
    from openinference.instrumentation.openai import OpenAIInstrumentor

    tracer_provider = provider()
    OpenAIInstrumentor().instrument(tracer_provider=tracer_provider)
    tracer = tracer_provider.get_tracer("e2e.openinference", "1.0")
    client = openai.OpenAI()
    tools = [
        {
            "type": "function",
            "function": {
                "name": "lookup_order",
                "parameters": {"type": "object", "properties": {"order": {"type": "integer"}}},
            },
        }
    ]
    messages: list[dict[str, object]] = [
        {"role": "system", "content": "You answer order questions."},
        {"role": "user", "content": "Where is order 7?"},
    ]
    with tracer.start_as_current_span("support", attributes={"openinference.span.kind": "AGENT"}) as root:
        trace_id = f"{root.get_span_context().trace_id:032x}"
        first = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools)  # type: ignore[arg-type]
        call = first.choices[0].message.tool_calls[0]  # type: ignore[index]
        with tracer.start_as_current_span("lookup_order") as tool:
            tool.set_attributes(
                {
                    "openinference.span.kind": "TOOL",
                    "tool.name": call.function.name,  # type: ignore[union-attr]
                    "input.value": call.function.arguments,  # type: ignore[union-attr]
                    "output.value": "shipped yesterday",
                }
            )
        messages += [
            first.choices[0].message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": "shipped yesterday"},
        ]
        client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools)  # type: ignore[arg-type]
    tracer_provider.force_flush()
    return trace_id


def main(which: str) -> None:
    if which == "sdk":
        genai_spans(provider(), wait=True)
    elif which == "json":
        print(genai_spans(provider(JsonExporter()), wait=False), flush=True)
    elif which == "pydantic":
        print(pydantic_agent(), flush=True)
    elif which == "openinference":
        print(openinference_agent(), flush=True)
    else:
        raise SystemExit(f"which agent? sdk, json or pydantic, not {which!r}")


if __name__ == "__main__":
    main(sys.argv[1])
