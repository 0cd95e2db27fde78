"""`POST /v1/traces`: OTLP/HTTP trace export, so any OpenTelemetry SDK or Collector can send here.

`OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:8484` in an instrumented agent is all it takes. As the
OTLP specification has it: the body is an `ExportTraceServiceRequest`, in protobuf
(`application/x-protobuf`) or JSON (`application/json`), gzip-compressed or not
(`Content-Encoding: gzip`); the answer is an `ExportTraceServiceResponse` in the request's encoding.

Each span becomes a start and an end TraceEvent (`devtool.formats.otlp_map`), which go through the
store's event gate and the live appender like any posted batch, so the run shows up live on its page
and in the runs list (OTLP exporters send spans as they end: a span appears when it ends, and its
children before it). The run is marked as from OpenTelemetry (its events' stream is `otlp`).

Answers:
- 200 with an empty response: every span stored;
- 200 with `partialSuccess {rejectedSpans, errorMessage}`: the spans that could not be read (bad ids,
  times, values) are named and left out, the others stored; the exporter must not send them again;
- 400 a body that is not such a request, or a request none of whose spans can be read; 413 a body
  (or what it inflates to) over `max_ingest_bytes`, or more spans than `max_ingest_events / 2`;
  415 another content type or encoding; 503 the store could not take it (nothing stored; retry).
Errors carry a `google.rpc.Status` (protobuf or JSON, as the request), as OTLP/HTTP says. Nothing of a
refused request is stored. Access is the server's rule for every route (a team token when set).
"""

from __future__ import annotations

from typing import Any

import orjson
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from devtool.formats import Decoded, OtlpError, decode_json_request, otlp_events
from devtool.formats.otlp_proto import decode_protobuf_request, encode_response, encode_status
from devtool.store import OTLP_STREAM
from devtool.store.event_gate import CheckedEvent, check_events
from devtool.web.bodies import BodyError, gunzipped, read_body
from devtool.web.state import state

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
SHOWN_REJECTIONS = 20
# google.rpc.Code: what each refusal is, for exporters that read the Status's code.
_CODES = {400: 3, 413: 8, 415: 3, 503: 14}


async def export_traces(request: Request) -> Response:
    settings = state(request).settings
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    protobuf = media_type == PROTOBUF
    try:
        if not protobuf and media_type != JSON:
            raise BodyError(415, f"OTLP/HTTP bodies are {PROTOBUF} or {JSON}, not {media_type or 'untyped'}")
        encoding = request.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("identity", "gzip"):
            raise BodyError(415, f"Content-Encoding {encoding} is not one OTLP/HTTP uses (gzip, or none)")
        body = await read_body(request, settings.max_ingest_bytes)
        events, decoded = await run_in_threadpool(
            _read, body, encoding, protobuf, settings.max_ingest_bytes, settings.max_ingest_events
        )
    except BodyError as exc:
        return _error(exc.status, str(exc), protobuf)
    try:
        await state(request).live.appender.append(events, stream=OTLP_STREAM)
    except Exception as exc:  # the store's own words, whatever it raised: the exporter retries
        return _error(503, f"the store could not take the spans, nothing of them was stored: {exc}", protobuf)
    if not decoded.rejected:
        return _answer(0, "", protobuf)
    refused = len(decoded.rejected)
    shown = "; ".join(str(r) for r in decoded.rejected[:SHOWN_REJECTIONS])
    more = f"; and {refused - SHOWN_REJECTIONS} more" if refused > SHOWN_REJECTIONS else ""
    return _answer(refused, f"{refused} of {decoded.total} spans refused: {shown}{more}", protobuf)


def _read(
    body: bytes, encoding: str, protobuf: bool, max_bytes: int, max_events: int
) -> tuple[list[CheckedEvent], Decoded]:
    """The request's spans as TraceEvents checked at the store's gate, and what was decoded."""
    if encoding == "gzip":
        body = gunzipped(body, max_bytes)
    try:
        decoded = decode_protobuf_request(body) if protobuf else decode_json_request(_json(body))
    except OtlpError as exc:
        raise BodyError(400, str(exc)) from None
    if 2 * decoded.total > max_events:
        events = 2 * decoded.total
        raise BodyError(413, f"{decoded.total} spans are {events} events, over the limit of {max_events}: send fewer")
    if decoded.rejected and not decoded.spans:
        first = decoded.rejected[0]
        raise BodyError(400, f"none of the {decoded.total} spans can be read ({first}): nothing stored")
    return check_events(list(otlp_events(decoded.spans))), decoded


def _json(body: bytes) -> Any:
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise OtlpError(f"the body is not JSON: {exc}") from None


def _answer(rejected: int, message: str, protobuf: bool) -> Response:
    if protobuf:
        return Response(encode_response(rejected, message), media_type=PROTOBUF)
    document = {"partialSuccess": {"rejectedSpans": rejected, "errorMessage": message}} if rejected else {}
    return Response(orjson.dumps(document), media_type=JSON)


def _error(status: int, message: str, protobuf: bool) -> Response:
    code = _CODES.get(status, 2)
    if protobuf:
        return Response(encode_status(code, message), status_code=status, media_type=PROTOBUF)
    return Response(orjson.dumps({"code": code, "message": message}), status_code=status, media_type=JSON)


routes = [Route("/v1/traces", export_traces, methods=["POST"], name="otlp_traces")]
