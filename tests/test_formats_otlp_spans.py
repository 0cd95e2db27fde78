"""Reading OTLP/JSON requests: every value kind, and each fault named by where it is."""

from __future__ import annotations

from typing import Any

import pytest

from devtool.formats import OtlpError, decode_json_request
from tests.otlp_factory import request, span


def one(**change: Any) -> dict[str, Any]:
    item = span("s", {"k": "v"}, sid="00f067aa0ba902b7")
    item.update(change)
    return request(item)


def test_anyvalues_of_every_kind_become_json() -> None:
    values = [
        {"key": "s", "value": {"stringValue": "x"}},
        {"key": "b", "value": {"boolValue": False}},
        {"key": "i", "value": {"intValue": "-9223372036854775808"}},
        {"key": "j", "value": {"intValue": 7}},
        {"key": "d", "value": {"doubleValue": 2}},
        {"key": "nan", "value": {"doubleValue": "NaN"}},
        {"key": "bytes", "value": {"bytesValue": "AAEC"}},
        {"key": "empty", "value": {}},
        {"key": "null-first", "value": {"stringValue": None, "intValue": "3"}},
        {"key": "kv", "value": {"kvlistValue": {"values": [{"key": "a", "value": {"boolValue": True}}, {"key": "z"}]}}},
    ]
    (decoded,) = decode_json_request(one(attributes=values)).spans
    assert decoded.attributes == {
        "s": "x",
        "b": False,
        "i": -(2**63),
        "j": 7,
        "d": 2.0,
        "nan": None,
        "bytes": "AAEC",
        "empty": None,
        "null-first": 3,
        "kv": {"a": True, "z": None},
    }


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"traceId": "abc"}, "traceId 'abc' is not 32 hex digits"),
        ({"traceId": None}, "no traceId"),
        ({"spanId": "0000000000000000"}, "spanId is all zeros"),
        ({"parentSpanId": "zz"}, "parentSpanId 'zz' is not 16 hex digits"),
        ({"startTimeUnixNano": "-5"}, "startTimeUnixNano is a string '-5', not an integer"),
        ({"startTimeUnixNano": "0"}, "not a time after the epoch"),
        ({"endTimeUnixNano": "1"}, "ends before it starts"),
        ({"kind": 9}, "kind 9 is not one of 0..5"),
        ({"status": {"code": "STATUS_CODE_BAD"}}, "status.code"),
        ({"attributes": [{"key": "a", "value": {"intValue": "9223372036854775808"}}]}, "out of the 64-bit range"),
        ({"attributes": [{"key": "a", "value": {"boolValue": "yes"}}]}, "boolValue is a string"),
        ({"attributes": [{"key": "a"}, {"key": "a"}]}, "attribute 'a' is given twice"),
        ({"attributes": [{"value": {}}]}, "an attribute's key is null"),
        ({"events": [{"name": "e"}]}, "an event's timeUnixNano is null"),
    ],
)
def test_a_bad_span_is_refused_with_where_and_why(change: dict[str, Any], reason: str) -> None:
    document = request(span("good"), one(**change)["resourceSpans"][0]["scopeSpans"][0]["spans"][0])
    decoded = decode_json_request(document)
    assert [s.name for s in decoded.spans] == ["good"]
    (rejected,) = decoded.rejected
    assert rejected.where == "resourceSpans[0].scopeSpans[0].spans[1]"
    assert reason in rejected.reason


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ([], "an ExportTraceServiceRequest is a JSON object, not an array"),
        ({"resourceSpans": {}}, "resourceSpans is an object, not an array"),
        ({"resourceSpans": [{"resource": 3}]}, "resourceSpans[0].resource: is a number, not an object"),
        ({"resourceSpans": [{"scopeSpans": [{"scope": {"name": 1}}]}]}, "resourceSpans[0].scopeSpans[0].scope: name"),
        (
            {"resourceSpans": [{"resource": {"attributes": [{"key": "a"}, {"key": "a"}]}}]},
            "resourceSpans[0].resource: attribute 'a' is given twice",
        ),
    ],
)
def test_a_request_of_the_wrong_shape_is_refused_whole(document: Any, message: str) -> None:
    with pytest.raises(OtlpError) as caught:
        decode_json_request(document)
    assert str(caught.value).startswith(message)


def test_an_empty_request_is_no_spans() -> None:
    decoded = decode_json_request({})
    assert (decoded.spans, decoded.rejected, decoded.total) == ([], [], 0)
