"""Log records written inside a span read as its events, held until the span comes, and merged into it."""

from __future__ import annotations

import base64
from typing import Any

import orjson
import pytest
from google.protobuf.json_format import ParseDict
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

from devtool.formats import OtlpError, decode_json_request, otlp_events
from devtool.formats.otlp_logs import SpanLogs, decode_json_logs
from devtool.formats.otlp_proto import decode_protobuf_logs
from tests.otlp_factory import attributes, log_record, logs_request, request, span

TRACE = "0af7651916cd43dd8448eb211c80319c"
CALL = {"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1}'}}


def chat_messages_as_logs(sid: str) -> dict[str, Any]:
    """What the OpenAI instrumentation sends in the GenAI conventions of v1.30: a record per message."""
    return logs_request(
        log_record("gen_ai.system.message", {"content": "Be brief."}, sid=sid, at_ms=1),
        log_record("gen_ai.user.message", {"content": "1 + 1?"}, sid=sid, at_ms=2),
        log_record(
            "gen_ai.choice", {"index": 0, "message": {"role": "assistant", "tool_calls": [CALL]}}, sid=sid, at_ms=3
        ),
    )


def test_records_in_a_span_are_its_events_with_their_body_read_all_the_way_down() -> None:
    decoded = decode_json_logs(chat_messages_as_logs("b" * 16))
    assert decoded.rejected == []
    assert [(r.trace_id, r.span_id, r.event.name) for r in decoded.records] == [
        (TRACE, "b" * 16, "gen_ai.system.message"),
        (TRACE, "b" * 16, "gen_ai.user.message"),
        (TRACE, "b" * 16, "gen_ai.choice"),
    ]
    choice = decoded.records[2].event.attributes
    assert choice == {"index": 0, "message": {"role": "assistant", "tool_calls": [CALL]}, "gen_ai.system": "openai"}


def test_the_held_messages_become_the_turns_when_its_span_comes() -> None:
    logs = SpanLogs()
    logs.hold(decode_json_logs(chat_messages_as_logs("b" * 16)).records)
    chat = span("chat gpt-4o-mini", {"gen_ai.operation.name": "chat", "gen_ai.system": "openai"}, sid="b" * 16)
    other = span("chat other", {"gen_ai.operation.name": "chat"}, sid="c" * 16)
    sent = decode_json_request(request(chat, other)).spans
    spans = logs.attach(sent)
    assert len(logs) == 3  # held until the spans are stored: a retry of the spans gets them again
    assert logs.attach(sent) == spans
    logs.release((s.trace_id, s.span_id) for s in spans)
    assert len(logs) == 0
    start, end, other_start, _ = otlp_events(spans)
    assert start["messages"] == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "1 + 1?"}]
    assert end["message"] == {"role": "assistant", "tool_calls": [{"id": "c1", "name": "add", "arguments": {"a": 1}}]}
    assert [e["name"] for e in start["otel"]["events"]] == [
        "gen_ai.system.message",
        "gen_ai.user.message",
        "gen_ai.choice",
    ]
    assert "messages" not in other_start


def test_records_beyond_the_limit_are_handed_back_and_those_held_are_kept() -> None:
    logs = SpanLogs(limit=2)
    refused = []
    for sid in ("1" * 16, "2" * 16, "3" * 16):
        records = decode_json_logs(logs_request(log_record("gen_ai.user.message", {"content": sid}, sid=sid))).records
        refused += logs.hold(records)
    assert len(logs) == 2
    assert [record.span_id for record in refused] == ["3" * 16]
    spans = decode_json_request(request(*(span("chat", sid=sid * 16) for sid in "123"))).spans
    assert [len(s.events) for s in logs.attach(spans)] == [1, 1, 0]
    logs.release((s.trace_id, s.span_id) for s in spans)
    assert (len(logs), logs.bytes) == (0, 0)


def test_a_record_outside_a_span_or_with_bad_ids_is_refused_by_place() -> None:
    decoded = decode_json_logs(
        logs_request(
            log_record("gen_ai.user.message", {"content": "no span"}),
            {**log_record("gen_ai.user.message", "x", sid="b" * 16), "spanId": "zz"},
            log_record("app.log", "plain text", sid="b" * 16),
        )
    )
    assert [str(r) for r in decoded.rejected] == [
        "resourceLogs[0].scopeLogs[0].logRecords[0]: the log record was not written inside a span (no traceId and "
        "spanId): nowhere to show it",
        "resourceLogs[0].scopeLogs[0].logRecords[1]: spanId 'zz' is not 16 hex digits",
    ]
    (kept,) = decoded.records
    assert (kept.event.name, kept.event.attributes["body"]) == ("app.log", "plain text")  # a body that is not a map


def test_a_protobuf_body_reads_as_its_json_encoding() -> None:
    document = chat_messages_as_logs("b" * 16)
    message = ParseDict(base64_ids(document), ExportLogsServiceRequest())
    assert decode_protobuf_logs(message.SerializeToString()) == decode_json_logs(document)
    with pytest.raises(OtlpError, match="not an OTLP ExportLogsServiceRequest"):
        decode_protobuf_logs(b"\x0a\xff\xff")


def base64_ids(document: dict[str, Any]) -> dict[str, Any]:
    for resource in document["resourceLogs"]:
        for scope in resource["scopeLogs"]:
            for record in scope["logRecords"]:
                for key in ("traceId", "spanId"):
                    record[key] = base64.b64encode(bytes.fromhex(record[key])).decode()
    return document


def test_the_latest_conventions_operation_details_event_gives_the_span_its_messages() -> None:
    question = [{"role": "user", "parts": [{"type": "text", "content": "1 + 1?"}]}]
    answer = [{"role": "assistant", "parts": [{"type": "text", "content": "2"}]}]
    details = {
        "timeUnixNano": "1790000000001000000",
        "eventName": "gen_ai.client.inference.operation.details",
        "attributes": attributes({"gen_ai.input.messages": question, "gen_ai.output.messages": answer}),
        "traceId": TRACE,
        "spanId": "b" * 16,
    }
    logs = SpanLogs()
    logs.hold(decode_json_logs(logs_request(details)).records)
    own = [{"role": "user", "parts": [{"type": "text", "content": "the span's own"}]}]
    chat = span(
        "chat", {"gen_ai.operation.name": "chat", "gen_ai.input.messages": orjson.dumps(own).decode()}, sid="b" * 16
    )
    (merged,) = logs.attach(decode_json_request(request(chat)).spans)
    start, end = otlp_events([merged])
    assert start["messages"] == [{"role": "user", "content": "the span's own"}]  # what the span says wins
    assert end["message"] == {"role": "assistant", "content": "2"}
    assert merged.attributes["gen_ai.output.messages"] == orjson.dumps(answer).decode()  # as a span holds it
