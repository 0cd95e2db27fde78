"""OTLP protobuf bodies read into the same spans as their JSON encoding, and refused when broken."""

from __future__ import annotations

import base64
import copy
from typing import Any

import pytest
from google.protobuf.json_format import MessageToDict, ParseDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

from devtool.formats import OtlpError, decode_json_request
from devtool.formats.otlp_proto import decode_protobuf_request, encode_response
from tests.otlp_factory import CORPUS


def protobuf(document: dict[str, Any]) -> bytes:
    """A JSON-encoded request as protobuf (protobuf's JSON parser wants ids in base64, OTLP/JSON has hex)."""
    document = copy.deepcopy(document)
    for resource in document["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for item in [span, *span.get("links", [])]:
                    for key in ("traceId", "spanId", "parentSpanId"):
                        if item.get(key):
                            item[key] = base64.b64encode(bytes.fromhex(item[key])).decode()
    return bytes(ParseDict(document, ExportTraceServiceRequest()).SerializeToString())


@pytest.mark.parametrize("document", CORPUS, ids=["genai", "openinference", "legacy"])
def test_a_protobuf_body_reads_as_its_json_encoding(document: dict[str, Any]) -> None:
    from_json = decode_json_request(document)
    assert from_json.spans
    assert decode_protobuf_request(protobuf(document)) == from_json


def test_the_sdk_exporters_own_encoding_reads_the_same_both_ways() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("tests", "1.0")
    agent = {"gen_ai.operation.name": "invoke_agent"}
    with tracer.start_as_current_span("invoke_agent a", attributes=agent), tracer.start_as_current_span("t") as tool:
        tool.set_attributes({"gen_ai.tool.name": "t", "n": 3, "ratio": 0.5, "ok": True, "tags": ["x", "y"]})
        tool.record_exception(ValueError("boom"))
        tool.set_status(Status(StatusCode.ERROR, "boom"))
    request = encode_spans(exporter.get_finished_spans())
    decoded = decode_protobuf_request(request.SerializeToString())
    # protobuf's generic JSON mapping writes ids in base64 and int64 as strings: read the same.
    assert decoded == decode_json_request(MessageToDict(request))
    tool_span = decoded.spans[0]
    assert tool_span.attributes == {"gen_ai.tool.name": "t", "n": 3, "ratio": 0.5, "ok": True, "tags": ["x", "y"]}
    assert tool_span.status_code == 2
    assert tool_span.events[0].name == "exception"
    assert tool_span.parent_span_id == decoded.spans[1].span_id


def test_a_span_with_a_bad_id_is_refused_by_place_and_the_rest_read() -> None:
    request = ExportTraceServiceRequest()
    ParseDict(MessageToDict(ExportTraceServiceRequest.FromString(protobuf(CORPUS[0]))), request)
    request.resource_spans[0].scope_spans[0].spans[1].span_id = b"\x01\x02"
    request.resource_spans[0].scope_spans[0].spans[2].trace_id = bytes(16)
    decoded = decode_protobuf_request(request.SerializeToString())
    assert [str(r) for r in decoded.rejected] == [
        "resourceSpans[0].scopeSpans[0].spans[1]: spanId is 2 bytes, not 8",
        "resourceSpans[0].scopeSpans[0].spans[2]: traceId is all zeros, which OTLP calls invalid",
    ]
    assert len(decoded.spans) == 2


@pytest.mark.parametrize(
    "body",
    [protobuf(CORPUS[0])[:-7], b"\xff" * 40, b'{"resourceSpans": []}'],
    ids=["truncated", "garbage", "json-sent-as-protobuf"],
)
def test_a_body_that_is_not_a_request_is_an_otlp_error(body: bytes) -> None:
    with pytest.raises(OtlpError, match="not an OTLP ExportTraceServiceRequest in protobuf"):
        decode_protobuf_request(body)


def test_the_answer_says_how_many_spans_were_refused() -> None:
    assert ExportTraceServiceResponse.FromString(encode_response(0, "")).HasField("partial_success") is False
    answer = ExportTraceServiceResponse.FromString(encode_response(2, "spans[1]: bad id"))
    assert (answer.partial_success.rejected_spans, answer.partial_success.error_message) == (2, "spans[1]: bad id")
