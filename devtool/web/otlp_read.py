"""Reading an OTLP/HTTP body: inflated, decoded, mapped to TraceEvents and checked at the store's gate.

What the OTLP reader's worker processes run (`live/otlp_reader.py`), and so all a worker imports: the
formats, the gate, the body's limits, no more. A spawned worker imports the module of each function it
is sent; this one was `live/otlp_reader.py`, whose packages' `__init__`s brought the whole web app
and the store with them, ~1 s of a fresh server's start before it said where it was.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import signal
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeVar

import orjson

from devtool.core.providers.pricing import PriceTable, default_price_table
from devtool.formats import Decoded, OtlpError, OtlpSpan, Rejected, decode_json_request, span_events
from devtool.formats.native import EVENTS, carried_texts
from devtool.formats.otlp_count import json_count, wire_count
from devtool.formats.otlp_logs import DecodedLogs, SpanLogs, decode_json_logs
from devtool.formats.otlp_proto import decode_protobuf_logs, decode_protobuf_request
from devtool.store.event_gate import CheckedEvent, Refused, check_event, read_line
from devtool.web.bodies import BodyError, gunzipped
from devtool.web.collector import quiet_collector

_Request = TypeVar("_Request", Decoded, DecodedLogs)
# JSON objects a request's body may hold for each event it may make (a span's attributes are two
# objects each, and attribute values holding JSON text count their braces too).
OBJECTS_PER_EVENT = 100


@dataclass(frozen=True, slots=True)
class Body:
    """An OTLP/HTTP body as it came, and the limits it is read within."""

    data: bytes
    encoding: str  # "gzip" or "identity"
    protobuf: bool  # else JSON
    max_bytes: int  # inflated
    max_events: int


@dataclass(frozen=True, slots=True)
class ReadSpans:
    """A trace request's spans as TraceEvents checked at the gate; those refused; how many it held."""

    events: list[CheckedEvent]
    rejected: list[Rejected]
    total: int

    def spans(self) -> Iterator[tuple[str, str]]:
        """The (trace id, span id) of each event's span, as `SpanLogs.release` takes them."""
        for checked in self.events:
            trace = checked.event["trace"]
            yield trace["traceId"], trace["spanId"]


class Sent(NamedTuple):
    """What a worker hands back of a request: the checked events by column, and the refusals."""

    texts: list[str]
    trace_ids: list[str]
    span_ids: list[str]
    parents: list[str | None]
    types: list[str]
    timestamps: list[float]
    written: list[bool]
    rejected: list[Rejected]
    total: int

    def events(self) -> list[CheckedEvent]:
        """The events again, each its text and its rule fields (what the store and the streams read)."""
        columns = (self.texts, self.trace_ids, self.span_ids, self.parents, self.types, self.timestamps, self.written)
        return [
            CheckedEvent(
                {"type": kind, "timestamp": at, "trace": {"traceId": t, "spanId": s, "parentSpanId": p}}, text, w
            )
            for text, t, s, p, kind, at, w in zip(*columns, strict=True)
        ]


class ReadFailed(RuntimeError):
    """A worker failed to read a request for a reason of its own (not the request's: that is a
    `BodyError`); the message is the worker's exception, as text that always pickles."""


def read_spans(body: Body, logs: SpanLogs) -> ReadSpans:
    """`body`'s spans (with the log records `logs` holds for them) as TraceEvents checked at the gate."""
    decoded = _decoded(body, decode_protobuf_request, decode_json_request, _SPANS)
    if decoded.rejected and not decoded.spans:
        first = decoded.rejected[0]
        raise BodyError(400, f"none of the {decoded.total} spans can be read ({first}): nothing stored")
    checked, refused = gated(logs.attach(decoded.spans))
    rejected = decoded.rejected + refused
    if rejected and not checked:
        first = rejected[0]
        raise BodyError(400, f"none of the {decoded.total} spans can be stored ({first}): nothing stored")
    return ReadSpans(checked, rejected, decoded.total)


def gated(spans: list[OtlpSpan]) -> tuple[list[CheckedEvent], list[Rejected]]:
    """Each span's two events through the store's gate, span by span: a span either of whose events the
    gate refuses (a time outside 2000-2100, an attribute nested past the gate's depth) is refused on its
    own, named by its ids, and the others go on (one bad span must not cost an exporter its batch)."""
    prices = default_price_table()
    checked: list[CheckedEvent] = []
    refused: list[Rejected] = []
    for span in spans:
        try:
            results = _span_events(span, prices)
        except ValueError as exc:
            results = [Refused(str(exc))]
        good = [result for result in results if isinstance(result, CheckedEvent)]
        if len(good) == len(results):
            checked += good
            continue
        reason = next(result.reason for result in results if isinstance(result, Refused))
        refused.append(Rejected(f"span {span.span_id} of trace {span.trace_id}", reason))
    return checked, refused


def _span_events(span: OtlpSpan, prices: PriceTable) -> list[CheckedEvent | Refused]:
    """The span's events through the gate: those it carries (a DevTool export's: `formats/native.py`),
    each its own text, else its mapping's; `ValueError` for carried events that cannot be its own."""
    texts = carried_texts(span.attributes)
    if texts is None:
        return [check_event(event) for event in span_events(span, prices)]
    results = [read_line(text.encode()) for text in texts]
    for result in results:
        if isinstance(result, CheckedEvent) and result.event["trace"]["traceId"] != span.trace_id:
            raise ValueError(f"{EVENTS} holds an event of another trace than its span's")
    return results


def read_logs(body: Body) -> DecodedLogs:
    return _decoded(body, decode_protobuf_logs, decode_json_logs, _LOGS)


def read_for_server(body: Body) -> Sent:
    """In a worker: `read_spans` of `body`, by column (no log records are held here).

    What it raises goes back to the server pickled, and one that cannot be unpickled there breaks the
    whole pool (every request in flight, of every exporter, then gets a 503): anything but a
    `BodyError` (a bug, not the request's fault) goes back as a `ReadFailed` in its own words."""
    try:
        read = read_spans(body, SpanLogs())
    except BodyError:
        raise
    except Exception as exc:
        raise ReadFailed(f"{type(exc).__name__}: {exc}") from None
    events = [checked.event for checked in read.events]
    traces = [event["trace"] for event in events]
    return Sent(
        [checked.text for checked in read.events],
        [trace["traceId"] for trace in traces],
        [trace["spanId"] for trace in traces],
        [trace.get("parentSpanId") for trace in traces],
        [event["type"] for event in events],
        [event["timestamp"] for event in events],
        [checked.written for checked in read.events],
        read.rejected,
        read.total,
    )


def _decoded(
    body: Body, from_protobuf: Callable[[bytes], _Request], from_json: Callable[[Any], _Request], items: _Items
) -> _Request:
    """`body`, inflated if gzipped, decoded as protobuf or JSON; one that is not such a request is a 400
    in the decoder's words, one of more items than `body.max_events` takes a 413, told before they are
    decoded (`otlp_count.py`)."""
    data = gunzipped(body.data, body.max_bytes) if body.encoding == "gzip" else body.data
    limit = body.max_events // items.events
    try:
        if body.protobuf:
            _check_count(wire_count(data, limit), limit, items, body.max_events)
            return from_protobuf(data)
        _check_objects(data, body.max_events)
        document = _json(data)
        _check_count(json_count(document, items.keys, limit), limit, items, body.max_events)
        return from_json(document)
    except OtlpError as exc:
        raise BodyError(400, str(exc)) from None


class _Items(NamedTuple):
    """What a request holds: its name, its lists' names in JSON, and the events each becomes."""

    name: str
    keys: tuple[str, str, str]
    events: int


_SPANS = _Items("spans", ("resourceSpans", "scopeSpans", "spans"), 2)
_LOGS = _Items("log records", ("resourceLogs", "scopeLogs", "logRecords"), 1)


def _check_objects(data: bytes, max_events: int) -> None:
    """A JSON body of more objects (its `{`, an upper bound) than `OBJECTS_PER_EVENT` for each event a
    request may make is a 413 before it is parsed: parsed, 32 MiB of `{},` would be 11 million
    dicts (~1 GB, 6 s), which counting the spans after parsing would come too late for."""
    limit = OBJECTS_PER_EVENT * max_events
    if data.count(b"{") > limit:
        raise BodyError(
            413,
            f"the JSON body holds over {limit:,} objects ({OBJECTS_PER_EVENT} for each of the {max_events:,} "
            "events a request may make): send fewer spans",
        )


def _check_count(count: int, limit: int, items: _Items, max_events: int) -> None:
    if count > limit:
        each = "two events each" if items.events == 2 else "an event each"
        raise BodyError(
            413, f"the request holds over {limit:,} {items.name} ({each}; the limit is {max_events:,}): send fewer"
        )


def _json(data: bytes) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise OtlpError(f"the body is not JSON: {exc}") from None


def ready() -> None:
    """A worker's first task: it has imported what reading takes by the time it answers."""


def start_worker() -> None:
    """A worker leaves Ctrl-C to the server, which shuts it down (else each would print a traceback),
    ends when the server does, however the server ended, and collects cycles as the server does: what
    it reads lives for a request, and makes few."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    server = multiprocessing.parent_process()
    if server is not None:
        threading.Thread(target=_end_with, args=(server.sentinel,), name="devtool-otlp-server", daemon=True).start()
    quiet_collector()


def _end_with(server: int) -> None:
    """End this worker once the server's sentinel says it ended: a server killed outright (SIGKILL, out
    of memory) never shuts its pool down, and a worker waiting for its next request would wait forever
    (it holds its own queue's writing end, so it never reads the end of it)."""
    multiprocessing.connection.wait([server])
    os._exit(0)
