"""Why a run went as it did: its failure's cause and the text inside it (`/runs/<trace_id>/cause`, `/find`).

- `GET /runs/<trace_id>/cause`: with `Accept: application/json`, `{"spanId", "callId", "chain": [span
  ids from the root to the cause], "error": {"name", "message"}}` (`devtool.store.queries.cause`); a run
  that did not fail is a 404 whose `{"error"}` says so. Otherwise the breadcrumb fragment the run page
  shows (`_cause.html`).
- `GET /runs/<trace_id>/find?q=`: the fields of the run's spans that hold the text, as JSON, a list of
  `{"spanId", "callId", "field", "snippet"}` (`devtool.store.queries.find`); its `Find-Searched` header
  says how many of the run's events were looked through or ruled out by its words, of how many
  (`1000000/10000000`: a find reads a million events at most).

The run page itself opens a failed run on its cause and finds text with the same queries
(`pages/run_workspace.py`, `routes/run.py`'s `/search`).
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from devtool.store import NotFoundError
from devtool.store.queries import get_run
from devtool.store.queries.cause import run_faults
from devtool.store.queries.find import find_in_run
from devtool.web.pages.run_url_state import BadUrlState, RunUrlState
from devtool.web.state import state
from devtool.web.templating import render

# The longest text a find looks for (the find box's own limit too).
MAX_FIND = 200


def run_cause(request: Request) -> Response:
    store = state(request).store
    trace_id = request.path_params["trace_id"]
    as_json = "application/json" in request.headers.get("accept", "")
    try:
        faults = run_faults(store, trace_id)
        run = get_run(store, trace_id)
        view = RunUrlState.from_query(request.query_params)
    except NotFoundError as exc:
        return _error(as_json, 404, str(exc))
    except BadUrlState as exc:
        return _error(as_json, 400, str(exc))
    if as_json:
        if faults.cause is None:
            return _error(True, 404, f"run {trace_id} did not fail ({run.status}): it has no cause to show")
        return JSONResponse(faults.cause.to_json())
    return render(request, "_cause.html", {"run": run, "faults": faults, "view": view})


def run_find(request: Request) -> Response:
    store = state(request).store
    trace_id = request.path_params["trace_id"]
    text = request.query_params.get("q", "")
    if len(text) > MAX_FIND:
        return _error(True, 400, f"q is {len(text)} characters long: find looks for at most {MAX_FIND}")
    try:
        found = find_in_run(store, trace_id, text)
    except NotFoundError as exc:
        return _error(True, 404, str(exc))
    # How much of the run was looked through or ruled out (a find reads `MAX_SCANNED` events at most).
    searched = {"Find-Searched": f"{found.searched}/{found.events}"}
    return JSONResponse([hit.to_json() for hit in found.hits], headers=searched)


def _error(as_json: bool, status: int, message: str) -> Response:
    if as_json:
        return JSONResponse({"error": message}, status_code=status)
    return Response(message, status_code=status, media_type="text/plain; charset=utf-8")


routes = [
    Route("/runs/{trace_id:id}/cause", run_cause, name="run_cause"),
    Route("/runs/{trace_id:id}/find", run_find, name="run_find"),
]
