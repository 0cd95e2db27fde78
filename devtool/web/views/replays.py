"""Replay and compare: run a snapshot's entrypoint again, watch it become a run, compare it with its original.

- `/snapshots/<id>/replay`: what a replay would run, shown before it runs: the command (an argument
  list, no shell), the entrypoint and where its module lives, the props; or, for a run without a
  recorded entrypoint, the Python lines that replay it by hand; or why the entrypoint is refused.
  `POST` with the fingerprint of what was shown starts it (see `replay.py` for the rules) → 303 to
  `/replays/<replay id>`, which waits for the new run's first events and then opens its page, where
  it streams live.
- `/runs/<trace_id>/actions`: the run header's buttons (copy link, export, rewound snapshots a run
  dumped, its replays, and for a replay: its snapshot, its original and "compare with original").
- `/runs/<trace_id>/compare?with=<original>`: the two frame trees side by side (`compare.py`).
"""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from devtool.store import NotFoundError, Store, StoredSnapshot
from devtool.store.queries import get_run
from devtool.store.queries.run_meta import replays_of, run_exists, run_metadata, run_of_replay, snapshot_dumps
from devtool.web.auth import user_of
from devtool.web.compare import CompareError, compare
from devtool.web.links import run_url
from devtool.web.replay import Replay, ReplayPlan, ReplayRefused, Replays, check_entrypoint
from devtool.web.templating import render, wants_fragment
from devtool.web.views.snapshots import find_snapshot

SERVER_URL_PLACEHOLDER = "<this DevTool>"


def replay_confirm(request: Request) -> HTMLResponse:
    store: Store = request.app.state.store
    stored = find_snapshot(store, request.path_params["snapshot_id"])
    return render(request, "replay_confirm.html", _confirm_context(request, store, stored))


async def replay_start(request: Request) -> Response:
    store: Store = request.app.state.store
    async with request.form(max_fields=5, max_files=0) as form:
        shown = str(form.get("fingerprint", ""))
    stored = await run_in_threadpool(find_snapshot, store, request.path_params["snapshot_id"])
    context = await run_in_threadpool(_confirm_context, request, store, stored)
    plan: ReplayPlan | None = context["plan"]
    if plan is None:
        raise HTTPException(422, context["refusal"] or "this snapshot's run has no recorded entrypoint to replay")
    if shown != plan.fingerprint:
        raise HTTPException(
            409, "what this replay would run changed since it was shown: look at it again before running it"
        )
    replays: Replays = request.app.state.replays
    replay = replays.start(plan, _server_url(request), actor=user_of(request))
    return RedirectResponse(request.url_for("replay", replay_id=replay.id).path, 303)


def replay_page(request: Request) -> Response:
    replay = _replay(request)
    if replay.trace_id is None:
        replay.trace_id = run_of_replay(request.app.state.store, replay.id)
    context = {"replay": replay, "returncode": replay.returncode, "log": replay.log_tail()}
    response = render(request, "replay.html", context, fragment="_replay_status.html")
    if replay.trace_id is not None and wants_fragment(request):
        # The run exists: open its page, where the rest of the replay streams in live.
        response.headers["HX-Redirect"] = run_url(replay.trace_id)
    return response


def run_actions(request: Request) -> HTMLResponse:
    """The run header's actions fragment."""
    store: Store = request.app.state.store
    trace_id = request.path_params["trace_id"]
    metadata = _metadata(store, trace_id)
    replay = metadata.get("replay") if isinstance(metadata.get("replay"), dict) else None
    original = replay.get("originalTraceId") if replay else None
    run = get_run(store, trace_id)
    context: dict[str, Any] = {
        "trace_id": trace_id,
        "started_ms": run.started_ms,
        "ended_ms": run.ended_ms,
        "entrypoint": metadata.get("entrypoint") if isinstance(metadata.get("entrypoint"), str) else None,
        "replay": replay,
        "original": original if isinstance(original, str) and run_exists(store, original) else None,
        "dumps": snapshot_dumps(store, trace_id),
        "replays": replays_of(store, trace_id)[:20],
    }
    return render(request, "_run_actions.html", context)


def _metadata(store: Store, trace_id: str) -> dict[str, Any]:
    """What the run recorded in `runWith:start` (entrypoint, replay of...); a 404 when there is no such run."""
    try:
        return run_metadata(store, trace_id)
    except NotFoundError as exc:
        raise HTTPException(404, str(exc)) from None


def compare_page(request: Request) -> HTMLResponse:
    store: Store = request.app.state.store
    trace_id = request.path_params["trace_id"]
    metadata = _metadata(store, trace_id)
    replay = metadata.get("replay") if isinstance(metadata.get("replay"), dict) else {}
    original = request.query_params.get("with") or (replay or {}).get("originalTraceId")
    if not isinstance(original, str) or not original:
        raise HTTPException(400, "compare with which run? This run is not a replay: pass ?with=<trace id>")
    if not run_exists(store, original):
        raise HTTPException(404, f"the original run {original} is not in this DevTool")
    try:
        comparison = compare(store, original, trace_id)
    except CompareError as exc:
        raise HTTPException(422, str(exc)) from None
    context = {
        "comparison": comparison,
        "left": get_run(store, original),
        "right": get_run(store, trace_id),
        "replay": replay,
        "only_differences": request.query_params.get("only") == "differences",
    }
    return render(request, "compare.html", context)


def _confirm_context(request: Request, store: Store, stored: StoredSnapshot) -> dict[str, Any]:
    trace_id = stored.top["provenance"].get("traceId")
    metadata: dict[str, Any] = {}
    if isinstance(trace_id, str) and run_exists(store, trace_id):
        metadata = run_metadata(store, trace_id)
    entrypoint = metadata.get("entrypoint")
    props = metadata.get("props", {})
    plan: ReplayPlan | None = None
    refusal: str | None = None
    if entrypoint is not None:
        root = request.app.state.replays.root
        try:
            module_path = check_entrypoint(entrypoint, root)
            plan = ReplayPlan(stored.info.snapshot_id, trace_id, entrypoint, props, module_path)
        except ReplayRefused as exc:
            refusal = str(exc)
    return {
        "info": stored.info,
        "trace_id": trace_id,
        "entrypoint": entrypoint,
        "props": props,
        "plan": plan,
        "refusal": refusal,
        "argv": plan.argv(SERVER_URL_PLACEHOLDER, "<new replay id>") if plan else None,
        "root": request.app.state.replays.root,
        "snapshot_url": str(request.url_for("snapshot_json", snapshot_id=stored.info.snapshot_id)),
        "base_url": str(request.base_url).rstrip("/"),
    }


def _replay(request: Request) -> Replay:
    replays: Replays = request.app.state.replays
    replay = replays.get(request.path_params["replay_id"])
    if replay is None:
        raise HTTPException(404, "no such replay on this server (replays are kept until it restarts)")
    return replay


def _server_url(request: Request) -> str:
    """Where the child reaches this server: the address the request came in on, on this machine."""
    server = request.scope.get("server")
    if not server or server[1] is None:
        raise HTTPException(500, "this server does not know its own address, so a replay cannot stream to it")
    host, port = server[0], server[1]
    shown = f"[{host}]" if ":" in host else host
    return f"{request.url.scheme}://{shown}:{port}"


routes = [
    Route("/snapshots/{snapshot_id}/replay", replay_confirm, name="replay_confirm"),
    Route("/snapshots/{snapshot_id}/replay", replay_start, methods=["POST"], name="replay_start"),
    Route("/replays/{replay_id}", replay_page, name="replay"),
    Route("/runs/{trace_id:id}/actions", run_actions, name="run_actions"),
    Route("/runs/{trace_id:id}/compare", compare_page, name="run_compare"),
]
