"""`/compare?a=&b=`: two runs compared call by call, opened on their first divergence.

- `GET /compare?a=<run>&b=<run>[&call=<callId>]`: the page (`pages/compare.py`); `a` alone shows the
  runs to compare it with (its original, its replays and forks, runs of its name or entrypoint).
  Runs are named by their id or the short prefix the UI shows (`store.queries.run_ids`).
- The same URL with `Accept: application/json`: `{"a", "b", "firstDivergence": {"callId", "name",
  "field", "path", "a", "b"} | null, "differing": n, "total": n}` (`actions.compare.summary_json`),
  what `devtool diff` asks a running server.
- `/runs/<id>/compare[?with=<run>]` (the first wave's URL) redirects here: `a` the run given by
  `with`, else the original of the replay `<id>`; `b` the run `<id>`.
"""

from __future__ import annotations

from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from devtool.actions.compare import compare, summary_json
from devtool.actions.fork_effects import ForkReport, fork_report
from devtool.store import NotFoundError, Store
from devtool.store.queries import get_run
from devtool.store.queries.lineage import lineages, relatives
from devtool.store.queries.replay_calls import ReplayCalls, replay_calls
from devtool.store.queries.replay_saving import replay_saving
from devtool.store.queries.run_ids import AmbiguousRunError, resolve_run
from devtool.store.queries.run_meta import run_metadata
from devtool.web.links import with_query
from devtool.web.pages.compare import CompareView, compare_view
from devtool.web.state import state
from devtool.web.templating import render


# Not async: every step asks the store (a compare of big runs takes seconds), and Starlette runs a plain
# function in its thread pool, so a slow store keeps no other request waiting.
def compare_page(request: Request) -> Response:
    store = state(request).store
    given = {key: request.query_params.get(key, "").strip() for key in ("a", "b")}
    json = _wants_json(request)
    try:
        if not given["a"]:
            raise HTTPException(
                400, "compare which runs? Give a=<run id> (and b=<run id>), or open a run and press Compare"
            )
        a = resolve_run(store, given["a"])
        b = resolve_run(store, given["b"]) if given["b"] else None
    except NotFoundError as exc:
        return _refuse(json, 404, str(exc))
    except AmbiguousRunError as exc:
        return _refuse(json, 400, str(exc), exc.candidates)
    except HTTPException as exc:
        return _refuse(json, exc.status_code, str(exc.detail))
    if b is None:
        if json:
            return _refuse(json, 400, "compare with which run? Give b=<run id>")
        picker = {"left": get_run(store, a), "right": None, "view": None, "lineage": lineages(store, [a])}
        return render(request, "compare.html", {**picker, "relatives": relatives(store, a)})
    if json:
        return JSONResponse(summary_json(store, compare(store, a, b)))
    if (a, b) != (given["a"], given["b"]):
        # A short id: the page's own URL names the runs in full, so it can be shared as it is.
        call = request.query_params.get("call")
        return RedirectResponse(with_query("/compare", {"a": a, "b": b, "call": call}), 303)
    view = compare_view(store, a, b, request.query_params.get("call"))
    right = get_run(store, b)
    context: dict[str, Any] = {
        "left": get_run(store, a),
        "right": right,
        "view": view,
        "lineage": lineages(store, [a, b]),
        "relatives": relatives(store, a),
        "fork": _fork_report(store, b, view),
        "only_differences": True,
        "replay_calls": _replayed(store, a, b),
        "saving": replay_saving(store, right),
    }
    return render(request, "compare.html", context)


def _replayed(store: Store, a: str, b: str) -> ReplayCalls | None:
    """B's calls when B is a replay of A; None for any other pair, whose calls were never served from
    A's recording (classifying them reads both runs' call ends: seconds at a million events)."""
    calls = replay_calls(store, b)
    return calls if calls is not None and calls.original == a else None


def _fork_report(store: Store, b: str, view: CompareView) -> ForkReport:
    """What B's fork edits did (when B replays a fork): the edits that did not take effect, and why
    nothing differs when nothing does."""
    replay = run_metadata(store, b).get("replay")
    snapshot_id = replay.get("snapshotId") if isinstance(replay, dict) else None
    live = view.comparison.served_b[1]
    return fork_report(store, snapshot_id, b, differences=view.comparison.differing, live=live)


def run_compare_redirect(request: Request) -> Response:
    """The first wave's `/runs/<id>/compare?with=`: the same comparison at `/compare`."""
    store = state(request).store
    trace_id = request.path_params["trace_id"]
    original = request.query_params.get("with")
    if not original:
        try:
            replay = run_metadata(store, trace_id).get("replay")
        except NotFoundError as exc:
            raise HTTPException(404, str(exc)) from None
        original = replay.get("originalTraceId") if isinstance(replay, dict) else None
    if not isinstance(original, str) or not original:
        return RedirectResponse(with_query("/compare", {"a": trace_id}), 303)
    return RedirectResponse(with_query("/compare", {"a": original, "b": trace_id}), 303)


def _wants_json(request: Request) -> bool:
    accept = request.headers.get("accept", "")
    return "application/json" in accept and "text/html" not in accept


def _refuse(json: bool, status: int, message: str, candidates: list[tuple[str, str]] | None = None) -> Response:
    if json:
        body: dict[str, Any] = {"error": message}
        if candidates:
            body["candidates"] = [{"traceId": trace, "name": name} for trace, name in candidates]
        return JSONResponse(body, status_code=status)
    raise HTTPException(status, message)


routes = [
    Route("/compare", compare_page, name="compare"),
    Route("/runs/{trace_id:id}/compare", run_compare_redirect, name="run_compare"),
]
