"""`/runs/<trace_id>/export.jsonl.gz`: a run's events to hand to a teammate (`devtool load` reads it).

A snapshot's export is its own JSON link (`/snapshots/<id>.json`, in `snapshots.py`).
"""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from devtool.store import NotFoundError
from devtool.store.export import export_run


async def run_export(request: Request) -> Response:
    trace_id: str = request.path_params["trace_id"]
    try:
        chunks = await run_in_threadpool(export_run, request.app.state.store, trace_id)
    except NotFoundError as exc:
        raise HTTPException(404, str(exc)) from None
    name = "".join(c if c.isalnum() or c in "-_." else "_" for c in trace_id)[:80] or "run"
    return StreamingResponse(
        chunks,
        media_type="application/gzip",
        headers={"Content-Disposition": f'attachment; filename="{name}.trace.jsonl.gz"'},
    )


routes = [Route("/runs/{trace_id:id}/export.jsonl.gz", run_export, name="run_export")]
