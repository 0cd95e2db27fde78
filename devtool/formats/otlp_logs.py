"""OTLP log records written inside a span, read as that span's events, and held until the span comes.

The GenAI conventions up to v1.36 send a model call's messages as events of their own
(`gen_ai.user.message`, `gen_ai.choice`, ...), and an OpenTelemetry SDK sends events as log records
(`POST /v1/logs`): the official OpenAI instrumentation (`opentelemetry-instrumentation-openai-v2`)
does so unless `OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental` puts the messages on the
span itself. A record carries the ids of the span it was written in, its name in `eventName` (or,
before that field, the `event.name` attribute) and its fields in `body`. Such a record is read as a
span event (`OtlpEvent`): its body's fields and its attributes as the event's attributes (a body that
is not a map is the attribute `body`), so `otlp_map` reads the messages as it reads span events of
the older conventions, and an export gives them back as span events. The latest conventions' event
of a model call (`gen_ai.client.inference.operation.details`, what an instrumentation sends when told
to put messages in events) holds the span's messages: they join the span's attributes as the JSON
text an instrumentation writes there (`gen_ai.input.messages`, ...), where the span has none of its own.

Log records are exported apart from spans, usually first (the SDK's log processor flushes every
second, its span processor every five, and a span is sent when it ends). `SpanLogs` holds records
until their span arrives (`attach`, then `release` once it is stored), at most `limit` of them and
`max_bytes` of their JSON: past that a record is not held but refused in the server's answer (a
partial success), never held and dropped later. A record outside any span has nowhere to go in a run
and is refused, by place, like a bad one.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any

import orjson

from devtool.core.jsonvalue import JSON, kind_of
from devtool.formats import semconv as sc
from devtool.formats.errors import OtlpError
from devtool.formats.otlp_spans import OtlpEvent, OtlpSpan, Rejected, array_member
from devtool.formats.otlp_values import VALUE_KEYS, any_value, hex_id, nanos

# How deep a log record's body and attributes are read (messages nest tool calls in lists of maps).
MAX_BODY_DEPTH = 16
EVENT_NAME_ATTRIBUTE = "event.name"
# Log records held for spans that have not come yet, at most (a record is ~1 KB), and their bytes.
HELD_LIMIT = 20_000
HELD_BYTES = 64 << 20
# What a held record costs besides its JSON (its objects, its place in the hold).
_RECORD_OVERHEAD = 256


@dataclass(frozen=True, slots=True)
class SpanLog:
    """A log record as an event of the span it was written in."""

    trace_id: str
    span_id: str
    event: OtlpEvent


@dataclass(frozen=True, slots=True)
class DecodedLogs:
    """The records read from one `ExportLogsServiceRequest`, in request order, and those refused."""

    records: list[SpanLog]
    rejected: list[Rejected]

    @property
    def total(self) -> int:
        return len(self.records) + len(self.rejected)


def decode_json_logs(document: Any) -> DecodedLogs:
    """Read an `ExportLogsServiceRequest` in its JSON encoding (already parsed; protobuf's generic JSON
    mapping, with base64 ids, is read too)."""
    records: list[SpanLog] = []
    rejected: list[Rejected] = []
    for where, record in _walk(document):
        try:
            records.append(span_log(record))
        except ValueError as exc:
            rejected.append(Rejected(where, str(exc)))
    return DecodedLogs(records, rejected)


def span_log(record: Any) -> SpanLog:
    """One log record in its JSON encoding; `ValueError` says why it cannot be a span's event."""
    if not isinstance(record, dict):
        raise ValueError(f"a log record is a JSON object, not {kind_of(record)}")
    if not record.get("spanId") or not record.get("traceId"):
        raise ValueError("the log record was not written inside a span (no traceId and spanId): nowhere to show it")
    trace_id = hex_id(record.get("traceId"), 16, "traceId")
    span_id = hex_id(record.get("spanId"), 8, "spanId")
    time = record.get("timeUnixNano")
    if time in (None, 0, "0"):
        time = record.get("observedTimeUnixNano")
    listed = record.get("attributes")
    attributes = _deep({"kvlistValue": {"values": [] if listed is None else listed}}, 0)
    if not isinstance(attributes, dict):
        raise ValueError("a log record's attributes are a list of key-values")
    body = _deep(record.get("body"), 1)
    fields = body if isinstance(body, dict) else ({} if body is None else {"body": body})
    name = record.get("eventName") or attributes.get(EVENT_NAME_ATTRIBUTE) or ""
    if not isinstance(name, str):
        raise ValueError(f"eventName is {kind_of(name)}, not a string")
    event = OtlpEvent(name, nanos(time, "timeUnixNano"), {**fields, **attributes})
    return SpanLog(trace_id, span_id, event)


def _deep(value: Any, depth: int) -> JSON:
    """An AnyValue with its maps and lists read all the way down (to `MAX_BODY_DEPTH`)."""
    if not isinstance(value, dict):
        return any_value(value)
    found = next((key for key in VALUE_KEYS if value.get(key) is not None), None)
    if found not in ("arrayValue", "kvlistValue"):
        return any_value(value)
    if depth > MAX_BODY_DEPTH:
        raise ValueError(f"the log record's body nests deeper than {MAX_BODY_DEPTH} levels")
    values = value[found].get("values", []) if isinstance(value[found], dict) else None
    if not isinstance(values, list):
        raise ValueError(f"{found} holds no list of values")
    if found == "arrayValue":
        return [_deep(element, depth + 1) for element in values]
    entries: dict[str, JSON] = {}
    for entry in values:
        key = entry.get("key") if isinstance(entry, dict) else None
        if not isinstance(key, str):
            raise ValueError("an entry of the log record's body has no key")
        if key in entries:
            raise ValueError(f"the log record's body gives {key!r} twice")
        entries[key] = _deep(entry.get("value"), depth + 1)
    return entries


def _walk(document: Any) -> Iterator[tuple[str, Any]]:
    if not isinstance(document, dict):
        raise OtlpError(f"an ExportLogsServiceRequest is a JSON object, not {kind_of(document)}")
    for i, resource_logs in enumerate(array_member(document, "resourceLogs", "")):
        at = f"resourceLogs[{i}]"
        if not isinstance(resource_logs, dict):
            raise OtlpError(f"is {kind_of(resource_logs)}, not an object", at)
        for j, scope_logs in enumerate(array_member(resource_logs, "scopeLogs", at)):
            scope_at = f"{at}.scopeLogs[{j}]"
            if not isinstance(scope_logs, dict):
                raise OtlpError(f"is {kind_of(scope_logs)}, not an object", scope_at)
            for k, record in enumerate(array_member(scope_logs, "logRecords", scope_at)):
                yield f"{scope_at}.logRecords[{k}]", record


def _with_details(attributes: dict[str, JSON], events: list[OtlpEvent]) -> dict[str, JSON]:
    """`attributes` with the messages of an operation-details event among `events` that they lack."""
    added: dict[str, JSON] = {}
    for event in events:
        if event.name == sc.OPERATION_DETAILS_EVENT:
            for key in sc.OPERATION_DETAILS:
                value = event.attributes.get(key)
                if key not in attributes and value is not None:
                    added[key] = value if isinstance(value, str) else orjson.dumps(value).decode()
    return {**attributes, **added} if added else attributes


class SpanLogs:
    """Log records waiting for their span, by (trace id, span id); safe to use from several threads.

    At most `limit` records and `max_bytes` bytes of them (measured as their JSON): a record that would
    go past either is not held but handed back by `hold`, for the server to refuse it in its answer.
    None is ever dropped once held: an exporter told a record was taken must find it with its span."""

    def __init__(self, limit: int = HELD_LIMIT, max_bytes: int = HELD_BYTES) -> None:
        self.limit = limit
        self.max_bytes = max_bytes
        self._held: dict[tuple[str, str], list[OtlpEvent]] = {}
        self._sizes: dict[tuple[str, str], int] = {}
        self._count = 0
        self._bytes = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self._count

    @property
    def bytes(self) -> int:
        """The size of the records held, as JSON."""
        return self._bytes

    def hold(self, records: Iterable[SpanLog]) -> list[SpanLog]:
        """Keep `records` until their spans come; those past `limit` or `max_bytes` are handed back."""
        refused: list[SpanLog] = []
        with self._lock:
            for record in records:
                size = record_size(record.event)
                if self._count + 1 > self.limit or self._bytes + size > self.max_bytes:
                    refused.append(record)
                    continue
                key = (record.trace_id, record.span_id)
                self._held.setdefault(key, []).append(record.event)
                self._sizes[key] = self._sizes.get(key, 0) + size
                self._count += 1
                self._bytes += size
        return refused

    def full(self) -> str:
        """Why a record was refused, in the server's words."""
        return (
            f"the server holds {self._count:,} log records ({self._bytes / (1 << 20):,.1f} MiB) for spans not sent "
            f"yet, its limit ({self.limit:,} records, {self.max_bytes >> 20} MiB): send the spans they were "
            "written in"
        )

    def attach(self, spans: list[OtlpSpan]) -> list[OtlpSpan]:
        """`spans`, each with the records held for it added to its events (in time order). The records stay
        held until `release`: a store that could not take the spans must not lose them."""
        if not self._count:
            return spans
        with self._lock:
            found: list[OtlpSpan] = []
            for span in spans:
                events = self._held.get((span.trace_id, span.span_id))
                if events is None:
                    found.append(span)
                    continue
                merged = sorted((*span.events, *events), key=lambda event: event.time_ns)
                found.append(replace(span, events=tuple(merged), attributes=_with_details(span.attributes, events)))
            return found

    def release(self, spans: Iterable[tuple[str, str]]) -> None:
        """Let go of the records of `spans` (trace id, span id), now stored with them."""
        if not self._count:
            return
        with self._lock:
            for key in spans:
                events = self._held.pop(key, None)
                if events is not None:
                    self._count -= len(events)
                    self._bytes -= self._sizes.pop(key)


def record_size(event: OtlpEvent) -> int:
    """A held record's size: its JSON's (what it holds in memory is of that order; a record is a few
    strings, and a large one is a large string)."""
    return len(event.name) + len(orjson.dumps(event.attributes)) + _RECORD_OVERHEAD
