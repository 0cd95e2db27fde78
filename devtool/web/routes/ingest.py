"""`POST /api/v1/traces`: a running agent's batch of TraceEvents, stored and fanned out live.

The body is what the TypeScript library's review exporter sends (and `devtool.core.HttpSink`): a
JSON array of TraceEvents, `Content-Type: application/json`. Each event is checked by the store's
rules; good ones are stored even when others in the batch are not, in one transaction, ordered by
timestamp and then by the exporter's `_seq` counter where events carry one (equal timestamps are
common at millisecond resolution), and published to the live streams.

Answers, JSON:
- 200 `{"accepted": n, "ids": [...], "rejected": []}`: all stored (`ids`: store positions, in the
  order the events were posted);
- 422 the same, with `"error"` and `"rejected": [{"index", "reason"}, ...]` (the first
  `SHOWN_REJECTIONS`; `"rejectedTotal"` counts them all): the others were stored;
- 400 a body that is not a JSON array, 413 a body over `max_ingest_bytes` or a batch over
  `max_ingest_events` (send smaller batches), 415 a body that says it is not JSON,
  503 the store could not take the batch (try again; nothing of it was stored).

The endpoint does no authentication itself: the server's access rules wrap every route alike.
Parsing and validation run in the thread pool, and so does the append, so a big batch never holds up
the event loop and the live streams on it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from devtool.core.jsonvalue import kind_of
from devtool.store.rules import trace_event_problem
from devtool.web.settings import Settings

# The stream (the store's `sources` row) that events posted here are recorded under.
STREAM = "http"
SHOWN_REJECTIONS = 100


class IngestError(Exception):
    """A request the endpoint refuses as a whole; `status` is its HTTP status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Rejection:
    index: int
    reason: str


@dataclass
class Batch:
    """A posted batch, checked: the good events in store order with their posted indexes, and the bad."""

    size: int
    events: list[Mapping[str, Any]] = field(default_factory=list)
    indexes: list[int] = field(default_factory=list)
    rejected: list[Rejection] = field(default_factory=list)


def parse_batch(body: bytes, max_events: int) -> Batch:
    """The batch in `body`, each event checked; `IngestError` when the body as a whole is wrong."""
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise IngestError(400, f"the body is not JSON: {exc}") from None
    if not isinstance(document, list):
        raise IngestError(400, f"the body must be a JSON array of TraceEvents, not {kind_of(document)}")
    if len(document) > max_events:
        raise IngestError(
            413, f"a batch of {len(document)} events is over the limit of {max_events}: send smaller batches"
        )
    batch = Batch(size=len(document))
    good: list[tuple[float, float, int]] = []
    for index, event in enumerate(document):
        problem = trace_event_problem(event)
        if problem is not None:
            batch.rejected.append(Rejection(index, problem))
            continue
        good.append((float(event["timestamp"]), _seq(event.get("_seq")), index))
    # Stable: events without `_seq` (and ties) keep the order they were posted in.
    good.sort(key=lambda key: key[:2])
    batch.indexes = [index for _, _, index in good]
    batch.events = [document[index] for index in batch.indexes]
    return batch


def _seq(value: Any) -> float:
    """The exporter's counter as a sort key; missing or not a finite number sorts as 0 (posted order)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return 0.0
    return float(value)


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, refused with a 413 as soon as it is known to be over `limit` bytes."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise IngestError(413, _too_big(int(declared), limit))
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise IngestError(413, _too_big(size, limit, at_least=True))
        chunks.append(chunk)
    return b"".join(chunks)


def _too_big(size: int, limit: int, *, at_least: bool = False) -> str:
    return f"the body is {'over ' if at_least else ''}{size} bytes, over the limit of {limit}: send smaller batches"


async def ingest(request: Request) -> JSONResponse:
    settings: Settings = request.app.state.settings
    try:
        media_type = request.headers.get("content-type", "application/json").split(";")[0].strip().lower()
        if media_type != "application/json" and not media_type.endswith("+json"):
            raise IngestError(415, f"the body must be application/json (a JSON array of TraceEvents), not {media_type}")
        body = await read_body(request, settings.max_ingest_bytes)
        batch = await run_in_threadpool(parse_batch, body, settings.max_ingest_events)
    except IngestError as exc:
        return JSONResponse({"error": str(exc)}, status_code=exc.status)
    try:
        stored = await request.app.state.live.appender.append(batch.events, stream=STREAM)
    except Exception as exc:  # the store's own words, whatever it raised: the agent's sink retries
        return JSONResponse(
            {"error": f"the store could not take the batch, nothing of it was stored: {exc}"}, status_code=503
        )
    ids = [event_id for _, event_id in sorted(zip(batch.indexes, stored, strict=True))]
    answer: dict[str, Any] = {
        "accepted": len(ids),
        "ids": ids,
        "rejected": [{"index": r.index, "reason": r.reason} for r in batch.rejected[:SHOWN_REJECTIONS]],
    }
    if not batch.rejected:
        return JSONResponse(answer)
    first = batch.rejected[0]
    answer = {
        "error": f"{len(batch.rejected)} of {batch.size} events rejected (event {first.index}: {first.reason}); "
        f"the other {len(ids)} were stored",
        **answer,
        "rejectedTotal": len(batch.rejected),
    }
    return JSONResponse(answer, status_code=422)


routes = [Route("/api/v1/traces", ingest, methods=["POST"], name="ingest")]
