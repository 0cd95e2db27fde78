"""`POST /v1/traces` and `/v1/logs`: OTLP/HTTP export, so any OpenTelemetry SDK or Collector can send here.

`OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:8484` in an instrumented agent is all it takes. As the
OTLP specification has it: the body is an `ExportTraceServiceRequest`, in protobuf
(`application/x-protobuf`) or JSON (`application/json`), gzip-compressed or not
(`Content-Encoding: gzip`); the answer is an `ExportTraceServiceResponse` in the request's encoding.

Each span becomes a start and an end TraceEvent (`devtool.formats.otlp_map`), which go through the
store's event gate and the live appender like any posted batch, so the run shows up live on its page
and in the runs list (OTLP exporters send spans as they end: a span appears when it ends, and its
children before it). The run is marked as from OpenTelemetry (its events' stream is `otlp`). The
body is read (inflated, decoded, mapped, checked) by `live/otlp_reader.py`, in a worker process
under `devtool serve`; this module owns the HTTP: content types, limits, answers.

Answers:
- 200 with an empty response: every span stored;
- 200 with `partialSuccess {rejectedSpans, errorMessage}`: the spans that could not be read (bad ids,
  times, values) or whose events the store's gate refuses (a time outside 2000-2100, values nested too
  deep) are named and left out, one by one, the others stored; the exporter must not send them again;
- 400 a body that is not such a request, or a request none of whose spans can be read; 413 a body
  (or what it inflates to) over `max_ingest_bytes`, or more spans than `max_ingest_events / 2` (more
  log records than `max_ingest_events`), counted before they are decoded (`formats/otlp_count.py`);
  415 another content type or encoding; 503 the store could not take it, or the worker reading it
  ended (nothing stored; retry).
`POST /v1/logs` takes log records written inside a span (the GenAI conventions' per-message events,
as the SDK sends them: `devtool.formats.otlp_logs`) and holds them until their span comes, when they
join its events; a record outside any span, one whose span is stored already, or one past what the
server holds (`SpanLogs`: a count and a byte limit), is refused by a partial success that says so
(`rejectedLogRecords`).

Errors carry a `google.rpc.Status` (protobuf or JSON, as the request), as OTLP/HTTP says. Nothing of a
refused request is stored. Access is the server's rule for every route (a team token when set).
"""

from __future__ import annotations

from collections.abc import Callable

import orjson
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from devtool.formats import Rejected
from devtool.formats.otlp_logs import SpanLog
from devtool.formats.otlp_proto import encode_logs_response, encode_response, encode_status
from devtool.store import OTLP_STREAM, Store
from devtool.store.live_append import stored_spans
from devtool.web.bodies import BodyError, read_body
from devtool.web.otlp_read import Body, read_logs
from devtool.web.settings import Settings
from devtool.web.state import state

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
SHOWN_REJECTIONS = 20
# google.rpc.Code: what each refusal is, for exporters that read the Status's code.
_CODES = {400: 3, 413: 8, 415: 3, 500: 13, 503: 14}


async def export_traces(request: Request) -> Response:
    app = state(request)
    settings = app.settings
    protobuf = _protobuf(request)
    try:
        read = await app.live.otlp_reader.read_spans(await _body(request, settings, protobuf))
    except BodyError as exc:
        return _error(exc.status, str(exc), protobuf)
    except Exception as exc:  # a bug in reading, not the request's fault: still an OTLP answer, not a page
        return _error(500, f"the server failed to read the request ({exc}): nothing of it was stored", protobuf)
    try:
        await app.live.appender.append(read.events, stream=OTLP_STREAM)
    except Exception as exc:  # the store's own words, whatever it raised: the exporter retries
        return _error(503, f"the store could not take the spans, nothing of them was stored: {exc}", protobuf)
    app.live.span_logs.release(read.spans())
    return _answer(_refusals(read.rejected, read.total, "spans"), protobuf, encode_response, "rejectedSpans")


async def export_logs(request: Request) -> Response:
    app = state(request)
    settings = app.settings
    protobuf = _protobuf(request)
    try:
        decoded = await run_in_threadpool(read_logs, await _body(request, settings, protobuf))
    except BodyError as exc:
        return _error(exc.status, str(exc), protobuf)
    try:
        late = await run_in_threadpool(_stored_spans, app.store, decoded.records)
    except Exception as exc:  # the store's own words: nothing was held, the exporter retries
        return _error(503, f"the store could not be asked about the records' spans, none was kept: {exc}", protobuf)
    held = [record for record in decoded.records if (record.trace_id, record.span_id) not in late]
    span_logs = app.live.span_logs
    over = span_logs.hold(held)
    refused = decoded.rejected + [
        Rejected(f"the record of span {record.span_id}", "its span is stored already: send logs before spans")
        for record in decoded.records
        if (record.trace_id, record.span_id) in late
    ]
    refused += [Rejected(f"the record of span {record.span_id}", span_logs.full()) for record in over]
    refusals = _refusals(refused, decoded.total, "log records")
    return _answer(refusals, protobuf, encode_logs_response, "rejectedLogRecords")


def _media_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";")[0].strip().lower()


def _protobuf(request: Request) -> bool:
    return _media_type(request) == PROTOBUF


async def _body(request: Request, settings: Settings, protobuf: bool) -> Body:
    """The request's body, once its content type and encoding are ones OTLP/HTTP uses."""
    media_type = _media_type(request)
    if media_type not in (PROTOBUF, JSON):
        raise BodyError(415, f"OTLP/HTTP bodies are {PROTOBUF} or {JSON}, not {media_type or 'untyped'}")
    encoding = request.headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("identity", "gzip"):
        raise BodyError(415, f"Content-Encoding {encoding} is not one OTLP/HTTP uses (gzip, or none)")
    data = await read_body(request, settings.max_ingest_bytes)
    return Body(data, encoding, protobuf, settings.max_ingest_bytes, settings.max_ingest_events)


def _stored_spans(store: Store, records: list[SpanLog]) -> set[tuple[str, str]]:
    """Which of the records' spans have events stored already (too late to join them)."""
    return stored_spans(store, ((r.trace_id, r.span_id) for r in records))


def _refusals(rejected: list[Rejected], total: int, what: str) -> tuple[int, str]:
    """How many items a partial success refuses, and the message naming them (the first few)."""
    if not rejected:
        return 0, ""
    shown = "; ".join(str(r) for r in rejected[:SHOWN_REJECTIONS])
    more = f"; and {len(rejected) - SHOWN_REJECTIONS} more" if len(rejected) > SHOWN_REJECTIONS else ""
    return len(rejected), f"{len(rejected)} of {total} {what} refused: {shown}{more}"


def _answer(
    refusals: tuple[int, str], protobuf: bool, encode: Callable[[int, str], bytes], rejected_key: str
) -> Response:
    rejected, message = refusals
    if protobuf:
        return Response(encode(rejected, message), media_type=PROTOBUF)
    document = {"partialSuccess": {rejected_key: rejected, "errorMessage": message}} if rejected else {}
    return Response(orjson.dumps(document), media_type=JSON)


def _error(status: int, message: str, protobuf: bool) -> Response:
    code = _CODES.get(status, 2)
    if protobuf:
        return Response(encode_status(code, message), status_code=status, media_type=PROTOBUF)
    return Response(orjson.dumps({"code": code, "message": message}), status_code=status, media_type=JSON)


routes = [
    Route("/v1/traces", export_traces, methods=["POST"], name="otlp_traces"),
    Route("/v1/logs", export_logs, methods=["POST"], name="otlp_logs"),
]
