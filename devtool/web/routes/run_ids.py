"""`GET /api/v1/runs/<id>`: the whole id of the run an id or a short prefix names (JSON).

`{"traceId", "name"}`; 404 `{"error"}` when no run has it, 400 `{"error", "candidates": [{"traceId",
"name"}]}` when a prefix starts several runs' ids (`store.queries.run_ids`). The command line asks it
for a short id before it asks a running server for the run (`devtool export`).
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from devtool.store import NotFoundError
from devtool.store.queries import get_run
from devtool.store.queries.run_ids import AmbiguousRunError, resolve_run
from devtool.web.state import state


def run_id(request: Request) -> JSONResponse:
    store = state(request).store
    try:
        whole = resolve_run(store, request.path_params["given"])
    except NotFoundError as exc:
        return JSONResponse({"error": str(exc)}, status_code=404)
    except AmbiguousRunError as exc:
        candidates = [{"traceId": trace, "name": name} for trace, name in exc.candidates]
        return JSONResponse({"error": str(exc), "candidates": candidates}, status_code=400)
    return JSONResponse({"traceId": whole, "name": get_run(store, whole).name})


routes = [Route("/api/v1/runs/{given:id}", run_id, name="api_run_id")]
