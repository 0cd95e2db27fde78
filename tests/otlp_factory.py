"""OTLP/JSON requests for tests: spans built the way instrumentations emit them, and a corpus of them.

`request(*spans)` wraps spans in an `ExportTraceServiceRequest` (one resource, one scope);
`span(name, attributes, ...)` is one span with OTLP/JSON's encodings (hex ids, times as decimal
strings, attributes as typed AnyValues). `CORPUS` holds one request per convention the mapping
reads, each a small agent run; `write_jsonl(path, requests)` writes them as the Collector's file
exporter does, one request a line.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import orjson

T0 = 1_790_000_000_000_000_000
_ids = itertools.count(1)


def value(item: Any) -> dict[str, Any]:
    """A Python value as an OTLP/JSON AnyValue."""
    if isinstance(item, bool):
        return {"boolValue": item}
    if isinstance(item, int):
        return {"intValue": str(item)}
    if isinstance(item, float):
        return {"doubleValue": item}
    if isinstance(item, list):
        return {"arrayValue": {"values": [value(element) for element in item]}}
    if isinstance(item, dict):
        return {"kvlistValue": {"values": [{"key": k, "value": value(v)} for k, v in item.items()]}}
    if item is None:
        return {}
    return {"stringValue": item}


def attributes(items: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": key, "value": value(item)} for key, item in items.items()]


def span_id() -> str:
    return f"{next(_ids):016x}"


def span(
    name: str,
    attrs: dict[str, Any] | None = None,
    *,
    trace: str = "0af7651916cd43dd8448eb211c80319c",
    sid: str | None = None,
    parent: str = "",
    start_ms: float = 0,
    duration_ms: float = 10,
    kind: int = 1,
    status: dict[str, Any] | None = None,
    events: list[dict[str, Any]] | None = None,
    links: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    start = T0 + int(start_ms * 1_000_000)
    found: dict[str, Any] = {
        "traceId": trace,
        "spanId": sid or span_id(),
        "name": name,
        "kind": kind,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(start + int(duration_ms * 1_000_000)),
        "attributes": attributes(attrs or {}),
    }
    if parent:
        found["parentSpanId"] = parent
    if status is not None:
        found["status"] = status
    if events is not None:
        found["events"] = events
    if links is not None:
        found["links"] = links
    return found


def event(name: str, attrs: dict[str, Any], at_ms: float = 1) -> dict[str, Any]:
    return {"name": name, "timeUnixNano": str(T0 + int(at_ms * 1_000_000)), "attributes": attributes(attrs)}


def request(*spans: dict[str, Any], scope: str = "tests", resource: dict[str, Any] | None = None) -> dict[str, Any]:
    resource_attributes = attributes(resource or {"service.name": "test-agents"})
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": resource_attributes},
                "scopeSpans": [{"scope": {"name": scope, "version": "1.0"}, "spans": list(spans)}],
            }
        ]
    }


def write_jsonl(path: Path, requests: list[dict[str, Any]]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(item) + b"\n" for item in requests))
    return path


def _messages(*items: dict[str, Any]) -> str:
    return orjson.dumps(list(items)).decode()


def genai_run(trace: str = "1" * 32) -> dict[str, Any]:
    """A Pydantic-AI-shaped run in the latest GenAI conventions: agent, two chats, a tool between."""
    root = "a" * 15 + "1"
    question = {"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]}
    call = {"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}}
    answer = {"role": "assistant", "parts": [call]}
    response = {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_1", "response": "sunny"}]}
    common = {"gen_ai.agent.name": "weather_agent", "gen_ai.provider.name": "openai"}
    chat = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4.1-mini", **common}
    return request(
        span(
            "chat gpt-4.1-mini",
            {
                **chat,
                "gen_ai.system_instructions": _messages({"type": "text", "content": "Be brief."}),
                "gen_ai.input.messages": _messages(question),
                "gen_ai.output.messages": _messages(answer),
                "gen_ai.usage.input_tokens": 56,
                "gen_ai.usage.output_tokens": 5,
                "gen_ai.response.finish_reasons": ["tool_calls"],
            },
            trace=trace,
            parent=root,
            start_ms=1,
            kind=3,
        ),
        span(
            "execute_tool get_weather",
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "get_weather",
                "gen_ai.tool.call.id": "call_1",
                "gen_ai.tool.call.arguments": '{"city": "Paris"}',
                "gen_ai.tool.call.result": "sunny",
                **common,
            },
            trace=trace,
            parent=root,
            start_ms=12,
            duration_ms=2,
        ),
        span(
            "chat gpt-4.1-mini",
            {
                **chat,
                "gen_ai.input.messages": _messages(question, answer, response),
                "gen_ai.output.messages": _messages(
                    {"role": "assistant", "parts": [{"type": "text", "content": "Sunny."}], "finish_reason": "stop"}
                ),
                "gen_ai.usage.input_tokens": 80,
                "gen_ai.usage.output_tokens": 3,
            },
            trace=trace,
            parent=root,
            start_ms=15,
            kind=3,
        ),
        span(
            "invoke_agent weather_agent",
            {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather_agent", "final_result": "Sunny."},
            trace=trace,
            sid=root,
            duration_ms=30,
        ),
        scope="pydantic-ai",
    )


def openinference_run(trace: str = "2" * 32) -> dict[str, Any]:
    """An OpenInference-shaped run: AGENT, an LLM with flattened messages and a tool call, a TOOL, a CHAIN."""
    root = "b" * 15 + "1"
    return request(
        span(
            "ChatCompletion",
            {
                "openinference.span.kind": "LLM",
                "llm.model_name": "gpt-4o-mini",
                "llm.provider": "openai",
                "llm.input_messages.0.message.role": "system",
                "llm.input_messages.0.message.content": "You are terse.",
                "llm.input_messages.1.message.role": "user",
                "llm.input_messages.1.message.contents.0.message_content.type": "text",
                "llm.input_messages.1.message.contents.0.message_content.text": "Look up order 7",
                "llm.input_messages.1.message.contents.1.message_content.type": "text",
                "llm.input_messages.1.message.contents.1.message_content.text": "and say its state.",
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.tool_calls.0.tool_call.id": "call_9",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "lookup_order",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"order": 7}',
                "llm.token_count.prompt": 31,
                "llm.token_count.completion": 9,
                "llm.token_count.total": 40,
            },
            trace=trace,
            parent=root,
            start_ms=1,
            kind=3,
        ),
        span(
            "lookup_order",
            {
                "openinference.span.kind": "TOOL",
                "tool.name": "lookup_order",
                "input.value": '{"order": 7}',
                "output.value": "shipped",
            },
            trace=trace,
            parent=root,
            start_ms=12,
        ),
        span(
            "retrieve",
            {"openinference.span.kind": "RETRIEVER", "input.value": "order 7", "output.value": '["doc-1"]'},
            trace=trace,
            parent=root,
            start_ms=14,
        ),
        span(
            "support-agent",
            {"openinference.span.kind": "AGENT", "agent.name": "support", "input.value": "order 7?"},
            trace=trace,
            sid=root,
            duration_ms=30,
        ),
        scope="openinference.instrumentation.openai",
    )


def legacy_run(trace: str = "3" * 32) -> dict[str, Any]:
    """GenAI v1.36 and older: `gen_ai.system`, one event per message, a choice; and a failed tool call."""
    root = "c" * 15 + "1"
    tool_calls = orjson.dumps([{"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{}"}}])
    return request(
        span(
            "openai.chat",
            {"gen_ai.system": "openai", "gen_ai.request.model": "gpt-3.5-turbo", "gen_ai.usage.prompt_tokens": 12},
            trace=trace,
            parent=root,
            kind=3,
            events=[
                event("gen_ai.system.message", {"content": "Be brief."}),
                event("gen_ai.user.message", {"content": "1+1?"}),
                event("gen_ai.assistant.message", {"tool_calls": tool_calls.decode()}),
                event("gen_ai.tool.message", {"content": "2", "id": "c1"}),
                event("gen_ai.choice", {"index": 0, "message": '{"role": "assistant", "content": "2"}'}, at_ms=9),
            ],
        ),
        span(
            "add",
            {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "add", "error.type": "ValueError"},
            trace=trace,
            parent=root,
            start_ms=11,
            status={"code": 2, "message": "bad operand"},
            events=[
                event(
                    "exception",
                    {"exception.type": "ValueError", "exception.message": "bad", "exception.stacktrace": "Trace..."},
                    at_ms=12,
                )
            ],
        ),
        span(
            "GET /health",
            {"http.request.method": "GET", "http.response.status_code": 200, "flags": [1.5, True, None]},
            trace=trace,
            sid=root,
            duration_ms=20,
            kind=2,
            status={"code": "STATUS_CODE_OK"},
            links=[{"traceId": "4" * 32, "spanId": "d" * 16, "attributes": attributes({"why": "retry"})}],
        ),
        scope="opentelemetry.instrumentation.openai",
    )


CORPUS = [genai_run(), openinference_run(), legacy_run()]


def log_record(
    name: str, body: Any, *, trace: str = "0af7651916cd43dd8448eb211c80319c", sid: str = "", at_ms: float = 1
) -> dict[str, Any]:
    """A log record as the SDK sends an event: `eventName`, its fields in `body`, the span it was written in."""
    record: dict[str, Any] = {
        "timeUnixNano": str(T0 + int(at_ms * 1_000_000)),
        "eventName": name,
        "body": value(body),
        "attributes": attributes({"gen_ai.system": "openai"}),
    }
    if sid:
        record.update(traceId=trace, spanId=sid)
    return record


def logs_request(*records: dict[str, Any]) -> dict[str, Any]:
    """An `ExportLogsServiceRequest` (one resource, one scope) of `records`."""
    scope = {"scope": {"name": "tests"}, "logRecords": list(records)}
    return {
        "resourceLogs": [
            {"resource": {"attributes": attributes({"service.name": "test-agents"})}, "scopeLogs": [scope]}
        ]
    }
