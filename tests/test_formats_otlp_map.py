"""OTel spans as TraceEvents: each convention's names land in the fields the DevTool shows."""

from __future__ import annotations

import json
from typing import Any

import pytest

from devtool.formats import decode_json_request, otlp_events, span_kind
from devtool.store.event_gate import trace_event_problem
from tests.otlp_factory import event, genai_run, legacy_run, openinference_run, request, span


def events_of(document: dict[str, Any]) -> list[dict[str, Any]]:
    decoded = decode_json_request(document)
    assert decoded.rejected == []
    return [dict(e) for e in otlp_events(decoded.spans)]


def by_type(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == kind]


def test_every_span_is_a_start_and_an_end_with_its_own_ids_and_valid_events() -> None:
    events = events_of(genai_run())
    assert len(events) == 8
    for start, end in zip(events[::2], events[1::2], strict=True):
        assert start["type"].endswith(":start")
        assert end["type"] == start["type"].replace(":start", ":end")
        assert start["trace"] == end["trace"]
        assert end["timestamp"] - start["timestamp"] == pytest.approx(end["duration"])
        assert trace_event_problem(start) is None
        assert trace_event_problem(end) is None
    agent = by_type(events, "agent:start")[0]
    assert agent["trace"] == {"traceId": "1" * 32, "spanId": "a" * 15 + "1", "parentSpanId": ""}
    children = [e for e in events if not e["type"].startswith("agent:")]
    assert {e["trace"]["parentSpanId"] for e in children} == {"a" * 15 + "1"}


def test_genai_latest_names_agents_turns_tools_messages_and_tokens() -> None:
    events = events_of(genai_run())
    assert by_type(events, "agent:end")[0]["result"] == "Sunny."
    assert {e["agentId"] for e in events} == {"weather_agent"}
    first, second = by_type(events, "turn:start")
    assert first["model"] == {"id": "gpt-4.1-mini", "provider": "openai"}
    assert first["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
    ]
    # A tool response part is a message of its own, after the assistant's call.
    assert second["messages"][1:] == [
        {"role": "assistant", "tool_calls": [{"id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
    ]
    ends = by_type(events, "turn:end")
    assert ends[0]["message"]["tool_calls"][0]["name"] == "get_weather"
    assert ends[1]["message"] == {"role": "assistant", "content": "Sunny."}
    assert ends[0]["usage"] == {"promptTokens": 56, "completionTokens": 5, "totalTokens": 61}
    # Priced by the DevTool's table: openai:gpt-4.1-mini, $0.40 in and $1.60 out per million tokens.
    assert ends[0]["costs"] == {"micro_usd": round(56 * 0.4 + 5 * 1.6)}
    (tool,) = by_type(events, "tools:execute:end")
    assert tool["toolNames"] == ["get_weather"]
    assert tool["toolResults"] == [
        {
            "toolName": "get_weather",
            "toolCallId": "call_1",
            "input": {"city": "Paris"},  # JSON text read into the object it holds
            "output": "sunny",
            "duration": 2.0,
            "success": True,
        }
    ]


def test_openinference_flattened_messages_tool_calls_and_token_counts() -> None:
    events = events_of(openinference_run())
    (turn,) = by_type(events, "turn:start")
    assert turn["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Look up order 7\nand say its state."},
    ]
    (answer,) = by_type(events, "turn:end")
    assert answer["message"] == {
        "role": "assistant",
        "tool_calls": [{"id": "call_9", "name": "lookup_order", "arguments": {"order": 7}}],
    }
    assert answer["usage"] == {"promptTokens": 31, "completionTokens": 9, "totalTokens": 40}
    assert by_type(events, "agent:start")[0]["agentId"] == "support"
    assert by_type(events, "tools:execute:end")[0]["toolResults"][0]["input"] == {"order": 7}
    retriever = by_type(events, "custom:span:end")[0]
    assert (retriever["name"], retriever["result"]) == ("retrieve", ["doc-1"])


def test_older_genai_per_message_events_errors_and_generic_spans() -> None:
    events = events_of(legacy_run())
    (turn,) = by_type(events, "turn:start")  # no operation name: gen_ai.system alone makes it a model call
    assert [m["role"] for m in turn["messages"]] == ["system", "user", "assistant", "tool"]
    assert turn["messages"][2]["tool_calls"] == [{"id": "c1", "name": "add", "arguments": {}}]
    assert turn["messages"][3] == {"role": "tool", "content": "2", "tool_call_id": "c1"}
    assert by_type(events, "turn:end")[0]["message"] == {"role": "assistant", "content": "2"}
    (tool,) = by_type(events, "tools:execute:end")
    assert tool["success"] is False
    assert tool["error"] == {"name": "ValueError", "message": "bad operand", "stack": "Trace..."}
    assert tool["toolResults"][0]["error"] == tool["error"]
    generic_start, generic_end = by_type(events, "custom:span:start"), by_type(events, "custom:span:end")
    assert generic_start[0]["name"] == "GET /health"
    assert generic_end[0]["success"] is True
    otel = generic_start[0]["otel"]
    # Nothing the span said is dropped.
    assert otel["attributes"] == {
        "http.request.method": "GET",
        "http.response.status_code": 200,
        "flags": [1.5, True, None],
    }
    assert otel["kind"] == "server"
    assert otel["status"] == {"code": "ok", "message": ""}
    assert otel["links"] == [{"traceId": "4" * 32, "spanId": "d" * 16, "attributes": {"why": "retry"}}]
    assert otel["resource"] == {"service.name": "test-agents"}
    assert otel["scope"] == {"name": "opentelemetry.instrumentation.openai", "version": "1.0"}


@pytest.mark.parametrize(
    ("attributes", "kind"),
    [
        ({"gen_ai.operation.name": "invoke_agent"}, "agent"),
        ({"gen_ai.operation.name": "generate_content"}, "turn"),
        ({"gen_ai.operation.name": "embeddings", "gen_ai.system": "openai"}, "custom:span"),
        ({"gen_ai.operation.name": "execute_tool", "openinference.span.kind": "LLM"}, "tools:execute"),
        ({"openinference.span.kind": "llm"}, "turn"),
        ({"openinference.span.kind": "CHAIN"}, "custom:span"),
        ({"gen_ai.provider.name": "anthropic"}, "turn"),
        ({"http.method": "GET"}, "custom:span"),
        ({"gen_ai.operation.name": 3}, "custom:span"),
    ],
)
def test_the_kind_of_a_span(attributes: dict[str, Any], kind: str) -> None:
    assert span_kind(attributes) == kind


def test_an_exception_event_names_an_error_without_a_status_message() -> None:
    failing = span(
        "agent run",
        {"gen_ai.operation.name": "invoke_agent"},
        status={"code": 2},
        events=[event("exception", {"exception.type": "KeyError", "exception.message": "'x'"})],
    )
    end = events_of(request(failing))[1]
    assert end["agentId"] == "agent run"  # no agent name: the span's own
    assert end["error"] == {"name": "KeyError", "message": "'x'"}
    # An exception that did not fail the span is kept as an event, not made an error.
    handled = span("tool", {}, events=[event("exception", {"exception.type": "Retry"})])
    start, end = events_of(request(handled))
    assert end["success"] is True
    assert "error" not in end
    assert start["otel"]["events"][0]["attributes"] == {"exception.type": "Retry"}


def test_a_genai_error_type_without_a_status_is_a_failure_and_an_ok_status_is_not() -> None:
    unset = span("execute_tool book", {"gen_ai.operation.name": "execute_tool", "error.type": "timeout"})
    ok = span(
        "execute_tool book", {"gen_ai.operation.name": "execute_tool", "error.type": "timeout"}, status={"code": 1}
    )
    failed_end = events_of(request(unset))[1]
    assert failed_end["success"] is False
    assert failed_end["error"] == {"name": "timeout", "message": "timeout"}
    assert failed_end["toolResults"][0]["success"] is False
    ok_end = events_of(request(ok))[1]
    assert ok_end["success"] is True
    assert "error" not in ok_end


def test_message_parts_that_are_not_text_stay_as_they_are() -> None:
    parts = [{"type": "text", "content": "what is this?"}, {"type": "uri", "uri": "https://x/img.png"}]
    chat = span(
        "chat",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": json.dumps([{"role": "user", "parts": parts}]),
            "gen_ai.output.messages": '[{"role": "assistant", "parts": []}]',
        },
    )
    start, end = events_of(request(chat))
    assert start["messages"] == [{"role": "user", "content": parts}]
    assert end["message"] == {"role": "assistant"}


def test_text_that_strict_json_refuses_stays_text() -> None:
    chat = span(
        "chat",
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.call.arguments": '{"x": NaN}',
            "gen_ai.tool.call.result": "[1, 2,]",
        },
    )
    result = events_of(request(chat))[1]["toolResults"][0]
    assert (result["input"], result["output"]) == ('{"x": NaN}', "[1, 2,]")


def test_an_array_inside_an_array_keeps_its_otlp_encoding() -> None:
    start = events_of(request(span("s", {"grid": [[1, 2], {"k": "v"}], "flat": ["a", 1]})))[0]
    assert start["otel"]["attributes"] == {
        "grid": [
            {"arrayValue": {"values": [{"intValue": "1"}, {"intValue": "2"}]}},
            {"kvlistValue": {"values": [{"key": "k", "value": {"stringValue": "v"}}]}},
        ],
        "flat": ["a", 1],
    }


def test_cached_tokens_and_a_dated_model_are_priced_and_unknown_models_are_not() -> None:
    def turn_end(**attrs: Any) -> dict[str, Any]:
        return events_of(request(span("chat", {"gen_ai.operation.name": "chat", **attrs})))[1]

    usage = {"gen_ai.usage.input_tokens": 1000, "gen_ai.usage.output_tokens": 10}
    cached = turn_end(
        **usage,
        **{"gen_ai.usage.cache_read.input_tokens": 600},
        **{"gen_ai.provider.name": "openai", "gen_ai.response.model": "gpt-4.1-mini-2025-04-14"},
    )
    assert cached["usage"]["details"] == {"cacheReadTokens": 600}
    assert cached["costs"] == {"micro_usd": round(400 * 0.4 + 600 * 0.1 + 10 * 1.6)}
    unknown = turn_end(**usage, **{"gen_ai.system": "acme", "gen_ai.request.model": "m"})
    assert "costs" not in unknown  # unknown, never 0
    assert unknown["usage"]["totalTokens"] == 1010
