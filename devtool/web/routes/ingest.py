"""`POST /api/v1/traces`: a running agent's batch of TraceEvents, stored and fanned out live.

The body is what the TypeScript library's review exporter sends (and `devtool.core.HttpSink`): a
JSON array of TraceEvents, `Content-Type: application/json`. It goes through the store's event gate
as it came (`event_gate.read_batch`: each event checked once, the good ones ordered by timestamp and
then by the exporter's `_seq` counter); good ones are stored even when others in the batch are not,
in one transaction, and published to the live streams.

Answers, JSON:
- 200 `{"accepted": n, "ids": [...], "duplicates": d, "rejected": []}`: all stored (`ids`: store
  positions, in the order the events were posted). An event stored already (the same batch posted
  again because its answer was lost: exporters retry) is accepted and not stored again: its id is
  null and `duplicates` counts it. So a retry is always safe;
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

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from devtool.store.errors import BatchTooLargeError, NotABatchError
from devtool.store.event_gate import read_batch
from devtool.web.bodies import BodyError, read_body
from devtool.web.state import state

# The stream (the store's `sources` row) that events posted here are recorded under.
STREAM = "http"
SHOWN_REJECTIONS = 100


async def ingest(request: Request) -> JSONResponse:
    settings = state(request).settings
    try:
        media_type = request.headers.get("content-type", "application/json").split(";")[0].strip().lower()
        if media_type != "application/json" and not media_type.endswith("+json"):
            raise BodyError(415, f"the body must be application/json (a JSON array of TraceEvents), not {media_type}")
        body = await read_body(request, settings.max_ingest_bytes)
        batch = await run_in_threadpool(read_batch, body, settings.max_ingest_events)
    except BodyError as exc:
        return JSONResponse({"error": str(exc)}, status_code=exc.status)
    except (NotABatchError, BatchTooLargeError) as exc:
        return JSONResponse({"error": str(exc)}, status_code=413 if isinstance(exc, BatchTooLargeError) else 400)
    try:
        stored = await state(request).live.appender.append(batch.events, stream=STREAM)
    except Exception as exc:  # the store's own words, whatever it raised: the agent's sink retries
        return JSONResponse(
            {"error": f"the store could not take the batch, nothing of it was stored: {exc}"}, status_code=503
        )
    ids = [event_id for _, event_id in sorted(zip(batch.indexes, stored, strict=True))]
    answer: dict[str, Any] = {
        "accepted": len(ids),
        "ids": ids,
        "duplicates": ids.count(None),
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
