"""OTLP trace requests read into spans: the `OtlpSpan` record, and reading the JSON encoding into it.

An `ExportTraceServiceRequest` nests spans in `resourceSpans[i].scopeSpans[j].spans[k]`; reading one
gives a flat list of `OtlpSpan`, each carrying its resource's and scope's attributes, and the spans
that cannot be read, each with where it is and why (`Decoded.rejected`), so a server can store the
good ones and answer with a partial success. A request that is not that shape at all is an
`OtlpError`. `otlp_proto.py` reads the protobuf encoding into the same records.

A span is refused when its ids are not valid OTLP ids (trace id 16 bytes, span id 8, neither all
zeros), its start or end time is missing or its end is before its start, an attribute key is given
twice, or a value is not what the field holds.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from devtool.core.jsonvalue import JSON, kind_of
from devtool.formats.errors import OtlpError
from devtool.formats.otlp_values import (
    SPAN_KINDS,
    STATUS_CODES,
    enum_code,
    hex_id,
    key_values,
    nanos,
)


@dataclass(frozen=True, slots=True)
class OtlpEvent:
    """A span event (an exception, a message of the older GenAI conventions, a log line)."""

    name: str
    time_ns: int
    attributes: dict[str, JSON]


@dataclass(frozen=True, slots=True)
class OtlpLink:
    trace_id: str
    span_id: str
    attributes: dict[str, JSON]


@dataclass(frozen=True, slots=True)
class OtlpSpan:
    """One span, with the resource and instrumentation scope it was reported under."""

    trace_id: str
    span_id: str
    parent_span_id: str  # "" for a root
    name: str
    kind: int  # SpanKind: an index into `SPAN_KINDS`
    start_ns: int
    end_ns: int
    attributes: dict[str, JSON]
    status_code: int = 0  # an index into `STATUS_CODES`
    status_message: str = ""
    events: tuple[OtlpEvent, ...] = ()
    links: tuple[OtlpLink, ...] = ()
    trace_state: str = ""
    scope_name: str = ""
    scope_version: str = ""
    resource: dict[str, JSON] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Rejected:
    """A span that was not read: where it is in the request, and why."""

    where: str
    reason: str

    def __str__(self) -> str:
        return f"{self.where}: {self.reason}"


@dataclass(frozen=True, slots=True)
class Decoded:
    """The spans read from one request, in request order, and those refused."""

    spans: list[OtlpSpan]
    rejected: list[Rejected]

    @property
    def total(self) -> int:
        return len(self.spans) + len(self.rejected)


def decode_json_request(document: Any) -> Decoded:
    """Read an `ExportTraceServiceRequest` in its JSON encoding (already parsed)."""
    spans: list[OtlpSpan] = []
    rejected: list[Rejected] = []
    for where, resource, scope, span in _walk(document):
        try:
            spans.append(json_span(span, resource, scope))
        except ValueError as exc:
            rejected.append(Rejected(where, str(exc)))
    return Decoded(spans, rejected)


def _walk(document: Any) -> Iterator[tuple[str, dict[str, JSON], tuple[str, str], Any]]:
    """Each span of the request with its path, resource attributes and scope (name, version)."""
    if not isinstance(document, dict):
        raise OtlpError(f"an ExportTraceServiceRequest is a JSON object, not {kind_of(document)}")
    for i, resource_spans in enumerate(array_member(document, "resourceSpans", "")):
        at = f"resourceSpans[{i}]"
        _object(resource_spans, at)
        resource_doc = _member(resource_spans, "resource", at)
        resource = _attributes(resource_doc, f"{at}.resource")
        for j, scope_spans in enumerate(array_member(resource_spans, "scopeSpans", at)):
            scope_at = f"{at}.scopeSpans[{j}]"
            _object(scope_spans, scope_at)
            scope_doc = _member(scope_spans, "scope", scope_at)
            scope = (_text(scope_doc, "name", f"{scope_at}.scope"), _text(scope_doc, "version", f"{scope_at}.scope"))
            for k, span in enumerate(array_member(scope_spans, "spans", scope_at)):
                yield f"{scope_at}.spans[{k}]", resource, scope, span


def json_span(span: Any, resource: dict[str, JSON], scope: tuple[str, str]) -> OtlpSpan:
    """One span in its JSON encoding; `ValueError` says what is wrong with it."""
    if not isinstance(span, dict):
        raise ValueError(f"a span is a JSON object, not {kind_of(span)}")
    start = nanos(span.get("startTimeUnixNano"), "startTimeUnixNano")
    end = nanos(span.get("endTimeUnixNano"), "endTimeUnixNano")
    if end < start:
        raise ValueError("the span ends before it starts (endTimeUnixNano < startTimeUnixNano)")
    status = span.get("status")
    if status is None:
        status = {}
    elif not isinstance(status, dict):
        raise ValueError(f"status is {kind_of(status)}, not an object")
    return OtlpSpan(
        trace_id=hex_id(span.get("traceId"), 16, "traceId"),
        span_id=hex_id(span.get("spanId"), 8, "spanId"),
        parent_span_id=hex_id(span.get("parentSpanId"), 8, "parentSpanId", optional=True),
        name=_string(span.get("name"), "name"),
        kind=enum_code(span.get("kind"), SPAN_KINDS, "SPAN_KIND_", "kind"),
        start_ns=start,
        end_ns=end,
        attributes=key_values(span.get("attributes", [])),
        status_code=enum_code(status.get("code"), STATUS_CODES, "STATUS_CODE_", "status.code"),
        status_message=_string(status.get("message"), "status.message"),
        events=tuple(_event(event) for event in _items(span, "events")),
        links=tuple(_link(link) for link in _items(span, "links")),
        trace_state=_string(span.get("traceState"), "traceState"),
        scope_name=scope[0],
        scope_version=scope[1],
        resource=resource,
    )


def _event(event: Any) -> OtlpEvent:
    if not isinstance(event, dict):
        raise ValueError(f"an event is {kind_of(event)}, not an object")
    return OtlpEvent(
        name=_string(event.get("name"), "an event's name"),
        time_ns=nanos(event.get("timeUnixNano"), "an event's timeUnixNano"),
        attributes=key_values(event.get("attributes", [])),
    )


def _link(link: Any) -> OtlpLink:
    if not isinstance(link, dict):
        raise ValueError(f"a link is {kind_of(link)}, not an object")
    return OtlpLink(
        trace_id=hex_id(link.get("traceId"), 16, "a link's traceId"),
        span_id=hex_id(link.get("spanId"), 8, "a link's spanId"),
        attributes=key_values(link.get("attributes", [])),
    )


def _items(span: dict[str, Any], key: str) -> list[Any]:
    items = span.get(key, [])
    if items is None:
        return []
    if not isinstance(items, list):
        raise ValueError(f"{key} is {kind_of(items)}, not an array")
    return items


def _string(value: Any, what: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"{what} is {kind_of(value)}, not a string")
    return value


def array_member(document: dict[str, Any], key: str, at: str) -> list[Any]:
    """The array `document[key]` of a request (missing or null: empty); `OtlpError` at `at` if not an array."""
    items = document.get(key, [])
    if items is None:
        return []
    if not isinstance(items, list):
        raise OtlpError(f"{key} is {kind_of(items)}, not an array", at)
    return items


def _object(value: Any, at: str) -> None:
    if not isinstance(value, dict):
        raise OtlpError(f"is {kind_of(value)}, not an object", at)


def _member(document: dict[str, Any], key: str, at: str) -> dict[str, Any]:
    value = document.get(key)
    if value is None:
        return {}
    _object(value, f"{at}.{key}")
    return dict(value)


def _attributes(document: dict[str, Any], at: str) -> dict[str, JSON]:
    try:
        return key_values(document.get("attributes", []))
    except ValueError as exc:
        raise OtlpError(str(exc), at) from None


def _text(document: dict[str, Any], key: str, at: str) -> str:
    try:
        return _string(document.get(key), key)
    except ValueError as exc:
        raise OtlpError(str(exc), at) from None
