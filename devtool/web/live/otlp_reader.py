"""Where OTLP export bodies are read: inflated, decoded, mapped to TraceEvents and checked at the
store's gate. In a worker process of the server's own when it has one, else in its threads.

Reading a request of 512 spans takes ~20 ms of CPU, all of it holding the GIL. Read in the server's
threads, that is time the thread appending to DuckDB waits for the GIL between its calls into
DuckDB, and under ingest at 10,000 spans a second the appends fell behind (BENCHMARKS.md, issue 16).
So `devtool serve` reads them in `Settings.otlp_workers` processes (`--otlp-workers`), which hand
back each event's JSON text and the few fields the store and the live streams read of it: the
events themselves would cost a third of the reading again to pickle.

A request whose spans may have log records held for them (`SpanLogs`, in the server) is read in the
server's threads, where the records are: they are rare (the older GenAI conventions' messages), and
sending every held record with every request would cost more than reading it here. So is a small
body (`SMALL_BODY` bytes as sent, a trace of a few spans: a millisecond of the GIL): in a worker it
queued behind the big bodies of an ingest (~20 ms each), and one small trace's export took 118 / 272 ms
(p50 / p95) to be answered during a 100,000-span ingest.

Bad input never costs more than itself: a span whose events the store's gate refuses is refused on
its own (`gated`: a partial success names it, the rest are stored), and what a worker raises always
pickles back, so no request ends a worker; a request of more spans than the server takes is counted
and refused before its spans are decoded (`_decoded`, `formats/otlp_count.py`).

A worker that dies (killed, out of memory) costs the request it was reading a 503, which the
exporter retries, and is replaced by a new one; nothing of that request was stored. A server that
dies takes its workers with it. One that cannot start them does not start (`WorkerStartError` says
why, and what to do).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import multiprocessing.connection
import os
import signal
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeVar

import orjson
from starlette.concurrency import run_in_threadpool

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
# Bodies up to this size as sent are read in the server's threads, not queued for a worker (the
# default of `Settings.otlp_small_body`).
SMALL_BODY = 32 * 1024


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


class _Sent(NamedTuple):
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


class ReadFailed(RuntimeError):
    """A worker failed to read a request for a reason of its own (not the request's: that is a
    `BodyError`); the message is the worker's exception, as text that always pickles."""


class WorkerStartError(RuntimeError):
    """A worker process ended before it could read anything (its own error is printed above)."""

    def __init__(self) -> None:
        super().__init__(
            "the process that reads OTLP exports could not start; its error is above. A script that "
            'starts workers must serve under `if __name__ == "__main__":` (they are spawned, and import '
            "the main module again); no workers (`--otlp-workers 0`, `Settings(otlp_workers=0)`) read "
            "exports in the server's own threads"
        )


class OtlpReader:
    """Reads trace requests in `workers` processes (none: in the server's threads), but for bodies of
    up to `small` bytes as sent, read in the server's threads."""

    def __init__(self, workers: int, logs: SpanLogs, *, small: int = SMALL_BODY) -> None:
        self.workers = workers
        self.logs = logs
        self.small = small
        self._pool: ProcessPoolExecutor | None = None

    async def start(self) -> None:
        """Start the workers and wait until each is ready, so that no export waits for one to start;
        `WorkerStartError` when one cannot start."""
        if self.workers:
            loop = asyncio.get_running_loop()
            pool = self._running()
            try:
                await asyncio.gather(*(loop.run_in_executor(pool, _ready) for _ in range(self.workers)))
            except BrokenProcessPool:
                self.close()
                raise WorkerStartError() from None

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    async def read_spans(self, body: Body) -> ReadSpans:
        """`body`'s spans as checked TraceEvents; `BodyError` for a body refused as a whole."""
        if not self.workers or len(self.logs) or len(body.data) <= self.small:
            return await run_in_threadpool(read_spans, body, self.logs)
        pool = self._running()
        try:
            sent = await asyncio.get_running_loop().run_in_executor(pool, _read_for_server, body)
        except BrokenProcessPool:
            if self._pool is pool:  # the next request starts a new one; this one's threads are let go
                self._pool = None
                pool.shutdown(wait=False, cancel_futures=True)
            message = "the process reading OTLP requests ended while reading this one: send it again"
            raise BodyError(503, message) from None
        return ReadSpans(_checked(sent), sent.rejected, sent.total)

    def _running(self) -> ProcessPoolExecutor:
        if self._pool is None:
            # Spawned, not forked: the server's DuckDB and uvicorn threads must not be copied mid-flight.
            context = multiprocessing.get_context("spawn")
            self._pool = ProcessPoolExecutor(self.workers, mp_context=context, initializer=_start_worker)
        return self._pool


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


def _read_for_server(body: Body) -> _Sent:
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
    return _Sent(
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


def _checked(sent: _Sent) -> list[CheckedEvent]:
    """The worker's events again, each its text and its rule fields (what the store and the streams read)."""
    columns = (sent.texts, sent.trace_ids, sent.span_ids, sent.parents, sent.types, sent.timestamps, sent.written)
    return [
        CheckedEvent({"type": kind, "timestamp": at, "trace": {"traceId": t, "spanId": s, "parentSpanId": p}}, text, w)
        for text, t, s, p, kind, at, w in zip(*columns, strict=True)
    ]


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


def _ready() -> None:
    """A worker's first task: it has imported what reading takes by the time it answers."""


def _start_worker() -> None:
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
