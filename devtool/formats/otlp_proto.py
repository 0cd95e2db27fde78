"""OTLP trace requests in the protobuf encoding (`application/x-protobuf`), read into `OtlpSpan`s;
log requests read as their JSON mapping (`otlp_logs.py`), which they are rare and small enough for.

The same records, the same checks and the same messages as the JSON encoding (`otlp_spans.py`): ids
arrive as bytes and are checked for their length, times as integers. Needs `opentelemetry-proto`
(the DevTool's `web` extra). A body that is not a valid `ExportTraceServiceRequest` (truncated, not
protobuf at all) is an `OtlpError`, and so is one nested deeper than protobuf's own limit.
"""

from __future__ import annotations

import base64
from typing import Any

from google.protobuf.json_format import MessageToDict
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from devtool.core.jsonvalue import JSON
from devtool.formats.errors import OtlpError
from devtool.formats.otlp_logs import DecodedLogs, decode_json_logs
from devtool.formats.otlp_spans import Decoded, OtlpEvent, OtlpLink, OtlpSpan, Rejected
from devtool.formats.otlp_values import MAX_DEPTH


def decode_protobuf_request(body: bytes) -> Decoded:
    """Read a serialized `ExportTraceServiceRequest`; `OtlpError` if it is not one."""
    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(body)
    except (DecodeError, RecursionError) as exc:
        raise OtlpError(f"the body is not an OTLP ExportTraceServiceRequest in protobuf: {exc}") from None
    spans: list[OtlpSpan] = []
    rejected: list[Rejected] = []
    for i, resource_spans in enumerate(request.resource_spans):
        try:
            resource = _attributes(resource_spans.resource.attributes)
        except ValueError as exc:
            raise OtlpError(str(exc), f"resourceSpans[{i}].resource") from None
        for j, scope_spans in enumerate(resource_spans.scope_spans):
            scope = scope_spans.scope
            for k, span in enumerate(scope_spans.spans):
                try:
                    spans.append(_span(span, resource, scope.name, scope.version))
                except ValueError as exc:
                    rejected.append(Rejected(f"resourceSpans[{i}].scopeSpans[{j}].spans[{k}]", str(exc)))
    return Decoded(spans, rejected)


def decode_protobuf_logs(body: bytes) -> DecodedLogs:
    """Read a serialized `ExportLogsServiceRequest`; `OtlpError` if it is not one."""
    request = ExportLogsServiceRequest()
    try:
        request.ParseFromString(body)
    except (DecodeError, RecursionError) as exc:
        raise OtlpError(f"the body is not an OTLP ExportLogsServiceRequest in protobuf: {exc}") from None
    return decode_json_logs(MessageToDict(request))


def encode_response(rejected: int, message: str) -> bytes:
    """An `ExportTraceServiceResponse`: empty when all was taken, else a partial success."""
    response = ExportTraceServiceResponse()
    if rejected:
        response.partial_success.rejected_spans = rejected
        response.partial_success.error_message = message
    return bytes(response.SerializeToString())


def encode_logs_response(rejected: int, message: str) -> bytes:
    """An `ExportLogsServiceResponse`: empty when all was taken, else a partial success."""
    response = ExportLogsServiceResponse()
    if rejected:
        response.partial_success.rejected_log_records = rejected
        response.partial_success.error_message = message
    return bytes(response.SerializeToString())


def encode_status(code: int, message: str) -> bytes:
    """A `google.rpc.Status` (code, message), OTLP/HTTP's error body, written by hand: its two fields are
    all it takes, and the message's own package (googleapis-common-protos) is not otherwise needed."""
    text = message.encode()
    return b"\x08" + _varint(code) + b"\x12" + _varint(len(text)) + text


def _varint(number: int) -> bytes:
    out = bytearray()
    while True:
        byte = number & 0x7F
        number >>= 7
        if number:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _span(span: Any, resource: dict[str, JSON], scope_name: str, scope_version: str) -> OtlpSpan:
    start, end = span.start_time_unix_nano, span.end_time_unix_nano
    if end < start:
        raise ValueError("the span ends before it starts (endTimeUnixNano < startTimeUnixNano)")
    if start == 0:
        raise ValueError("startTimeUnixNano 0 is not a time after the epoch")
    kind, status = span.kind, span.status
    code = status.code
    parent = span.parent_span_id
    events, links = span.events, span.links
    return OtlpSpan(
        trace_id=_id(span.trace_id, 16, "traceId"),
        span_id=_id(span.span_id, 8, "spanId"),
        parent_span_id=_id(parent, 8, "parentSpanId") if parent else "",
        name=span.name,
        kind=kind if 0 <= kind < 6 else _bad_enum("kind", kind),
        start_ns=start,
        end_ns=end,
        attributes=_attributes(span.attributes),
        status_code=code if 0 <= code < 3 else _bad_enum("status.code", code),
        status_message=status.message,
        events=tuple(
            OtlpEvent(event.name, _event_time(event.time_unix_nano), _attributes(event.attributes)) for event in events
        )
        if events
        else (),
        links=tuple(
            OtlpLink(
                _id(link.trace_id, 16, "a link's traceId"),
                _id(link.span_id, 8, "a link's spanId"),
                _attributes(link.attributes),
            )
            for link in links
        )
        if links
        else (),
        trace_state=span.trace_state,
        scope_name=scope_name,
        scope_version=scope_version,
        resource=resource,
    )


def _id(raw: bytes, size: int, what: str) -> str:
    """`raw` as lower-case hex, as `otlp_values.hex_id` reads the JSON encoding's ids."""
    if len(raw) != size:
        raise ValueError(f"{what} is {len(raw)} bytes, not {size}")
    if raw.count(0) == size:
        raise ValueError(f"{what} is all zeros, which OTLP calls invalid")
    return raw.hex()


def _event_time(value: int) -> int:
    if value == 0:
        raise ValueError("an event's timeUnixNano 0 is not a time after the epoch")
    return value


def _bad_enum(what: str, value: int) -> int:
    raise ValueError(f"{what} {value} is not a known value")


def _attributes(items: Any, depth: int = 1) -> dict[str, JSON]:
    found: dict[str, JSON] = {}
    for item in items:
        key = item.key
        if key in found:
            raise ValueError(f"attribute {key!r} is given twice")
        value = item.value
        which = value.WhichOneof("value")
        # Strings are most attributes: read them here, without a call a value.
        found[key] = value.string_value if which == "string_value" else _value(value, which, depth)
    return found


def _value(value: Any, which: str | None, depth: int) -> JSON:
    if which is None:
        return None
    if which == "string_value":
        return str(value.string_value)
    if which == "int_value":
        return int(value.int_value)
    if which == "bool_value":
        return bool(value.bool_value)
    if which == "double_value":
        number = float(value.double_value)
        return number if number - number == 0 else None  # NaN and ±infinity: null, as in JSON
    if which == "bytes_value":
        return base64.b64encode(value.bytes_value).decode("ascii")
    if depth >= MAX_DEPTH:
        return _encoded(value)
    if which == "array_value":
        return [_value(element, element.WhichOneof("value"), depth + 1) for element in value.array_value.values]
    return _attributes(value.kvlist_value.values, depth=depth + 1)


def _encoded(value: Any) -> JSON:
    """An AnyValue in OTLP/JSON's encoding (what a JSON body would have held): past `MAX_DEPTH`."""
    which = value.WhichOneof("value")
    if which is None:
        return {}
    if which == "array_value":
        return {"arrayValue": {"values": [_encoded(element) for element in value.array_value.values]}}
    if which == "kvlist_value":
        entries = value.kvlist_value.values
        return {"kvlistValue": {"values": [{"key": e.key, "value": _encoded(e.value)} for e in entries]}}
    if which == "int_value":
        return {"intValue": str(value.int_value)}
    if which == "double_value":
        number = float(value.double_value)
        if number != number:
            return {"doubleValue": "NaN"}
        if number - number != 0:
            return {"doubleValue": "Infinity" if number > 0 else "-Infinity"}
        return {"doubleValue": number}
    if which == "bytes_value":
        return {"bytesValue": base64.b64encode(value.bytes_value).decode("ascii")}
    camel = {"string_value": "stringValue", "bool_value": "boolValue"}[which]
    found: JSON = getattr(value, which)
    return {camel: found}
