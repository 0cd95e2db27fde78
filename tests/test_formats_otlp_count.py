"""Counting an OTLP request's spans and log records before decoding it (`otlp_count.py`)."""

from __future__ import annotations

import copy

import pytest
from google.protobuf.json_format import ParseDict
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

from devtool.formats.otlp_count import json_count, wire_count
from tests.otlp_factory import CORPUS, log_record, logs_request, request, span
from tests.test_formats_otlp_logs import base64_ids
from tests.test_formats_otlp_proto import protobuf

SPANS = ("resourceSpans", "scopeSpans", "spans")
LOGS = ("resourceLogs", "scopeLogs", "logRecords")


def two_resources() -> dict:
    document = request(span("a"), span("b"), span("c"))
    resource = document["resourceSpans"][0]
    resource["scopeSpans"].append({"scope": {"name": "other"}, "spans": [span("d")]})
    document["resourceSpans"].append(copy.deepcopy(resource))
    return document  # 8 spans: 3 + 1 in each of two resources


@pytest.mark.parametrize("document", [*CORPUS, two_resources(), {"resourceSpans": []}, request()])
def test_the_count_read_off_the_wire_is_the_requests_spans(document: dict) -> None:
    total = sum(len(s["spans"]) for r in document.get("resourceSpans", []) for s in r["scopeSpans"])
    assert wire_count(protobuf(document), 10_000) == json_count(document, SPANS, 10_000) == total
    if total:
        assert wire_count(protobuf(document), total - 1) == json_count(document, SPANS, total - 1) == total


def test_log_records_are_counted_the_same_way() -> None:
    document = logs_request(*[log_record("app.log", "x", sid="d" * 16) for _ in range(7)])
    data = ParseDict(base64_ids(copy.deepcopy(document)), ExportLogsServiceRequest()).SerializeToString()
    assert wire_count(data, 100) == json_count(document, LOGS, 100) == 7
    assert wire_count(data, 3) == 4


@pytest.mark.parametrize("data", [b"", b"\x0a\xff", b"\x0a\x05\x12\x03\x12\x01", b"\x0b\x0c", b"\xff" * 20, b"\x0a"])
def test_a_body_that_is_not_protobuf_is_counted_as_far_as_it_reads(data: bytes) -> None:
    assert wire_count(data, 10) <= 1


def test_json_of_another_shape_counts_what_has_the_shape() -> None:
    assert json_count([1], SPANS, 5) == 0
    assert (
        json_count({"resourceSpans": [1, {"scopeSpans": {"spans": []}}, {"scopeSpans": [{"spans": [1, 2]}]}]}, SPANS, 5)
        == 2
    )
