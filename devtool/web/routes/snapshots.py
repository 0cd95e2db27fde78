"""Snapshots, `/snapshots…`: their pages, uploads and forks, and replaying one (`/replays/<id>`).

Rewind makes them (`POST /runs/<trace_id>/rewind`, in `run.py`).

- `/snapshots`: every stored snapshot, newest first, and the upload form; `POST /snapshots` takes a
  snapshot file (a form's `file`, or the JSON itself as the body) and refuses a malformed one with a
  422 naming the first bad field (`snapshot.root.state.status: must be one of ...`).
- `/snapshots/<id>`: provenance (run, span, anchor, source, when, who, the snapshot it was forked
  from), metadata, and the frame tree a page at a time (`?frames=<offset>`): each frame's status,
  output, memory and journal entries, tombstones marked. `/snapshots/<id>.json` is the document
  itself, assembled from its frames, exactly what `run_with(snapshot=...)` takes (its id is
  `devtool.core.snapshot_tree.snapshot_id` of it).
- `POST /snapshots/<id>/fork`: the frame tree's form: memory edited as JSON (`memory.<n>` for the
  frame `call.<n>`), journal entries' outputs edited as JSON (`output.<n>:<kind>:<hash>`: what that
  call returns on a replay) and journal entries to drop (`drop` = `<n>:<kind>:<hash>`) → a new snapshot
  whose parent is recorded → 303 to it.
- `/snapshots/<id>/replay`: what a replay would run, shown before it runs: the exact argument list
  the child gets (no shell), the entrypoint, where its module declares it `@replayable` and that
  source, the props; or, for a run without a recorded entrypoint, the lines that replay it by hand
  with the props it was recorded with (Python, or for a run the TypeScript library wrote, Node's);
  or why the entrypoint is refused. `POST` with the page's one-time confirmation (`confirm`) and the
  page token (`_csrf`), required of every client, starts what was shown
  (`devtool.actions.replay_runner` has the rules) → 303 to `/replays/<replay id>`, which waits for
  the new run's first events and then opens its page, where it streams live.

A snapshot that a run dumped (`dump_snapshot()`, a `snapshot:dump` event) has a page as soon as its
run is in the store: the first visit stores it under its id.
"""

from __future__ import annotations

import re
from typing import Any

import orjson
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData, UploadFile
from starlette.exceptions import HTTPException
from starlette.formparsers import MultiPartException
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from devtool.actions.fork import Edits, ForkError, fork, parse_json, parse_memory
from devtool.actions.replay_by_hand import by_hand
from devtool.actions.replay_runner import Replay, ReplayPlan, ReplayRefused, check_entrypoint
from devtool.store import NotFoundError, Store, StoredSnapshot, StoreError, get_snapshot, list_snapshots, save_snapshot
from devtool.store.export import export_snapshot
from devtool.store.queries.lineage import span_names
from devtool.store.queries.run_meta import RunStart, dumped_snapshot, run_exists, run_of_replay, run_start
from devtool.web.auth import CSRF_FIELD, user_of
from devtool.web.bodies import BodyError, read_body
from devtool.web.forms import form_of
from devtool.web.lake_open import snapshot_from_lake
from devtool.web.links import run_url
from devtool.web.pages.snapshot_frames import snapshot_page_data
from devtool.web.state import state
from devtool.web.templating import render, wants_fragment

SNAPSHOT_ID = re.compile(r"[0-9a-f]{64}")
MAX_FORK_FIELDS = 20_000


def snapshots_page(request: Request) -> HTMLResponse:
    return render(request, "snapshots.html", {**_listed(state(request).store), "error": None})


def _listed(store: Store) -> dict[str, Any]:
    """The newest snapshots, and each one's cut named by its span."""
    snapshots = list_snapshots(store)[:500]
    cuts = [(s.trace_id, s.span_id) for s in snapshots if s.trace_id and s.span_id]
    return {"snapshots": snapshots, "cut_names": span_names(store, cuts)}


async def upload_snapshot(request: Request) -> Response:
    """`POST /snapshots`: a snapshot file (form field `file`) or the JSON itself as the body."""
    limit: int = state(request).settings.max_upload_bytes
    over = f"the snapshot is over the upload limit of {limit >> 20} MiB"
    length = request.headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > limit + (64 << 10):
        return await _upload_refused(request, 413, over)
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type == "multipart/form-data":
        try:
            async with request.form(max_files=1, max_fields=5) as form:
                upload = form.get("file")
                if not isinstance(upload, UploadFile) or not upload.filename:
                    return await _upload_refused(request, 400, "no file in the upload: choose a snapshot file")
                raw = await upload.read(limit + 1)
        except MultiPartException as exc:
            return await _upload_refused(request, 400, f"the upload is not a form with a file: {exc.message}")
        if len(raw) > limit:  # within the form's allowance for its framing, over by the file's own size
            return await _upload_refused(request, 413, over)
    else:
        try:
            raw = await read_body(request, limit)
        except BodyError:
            return await _upload_refused(request, 413, over)
    try:
        # Up to the upload limit of JSON: parsed in the thread pool, as every body is, not on the event loop.
        document = await run_in_threadpool(orjson.loads, raw)
    except orjson.JSONDecodeError as exc:
        return await _upload_refused(request, 422, f"the file is not JSON: {exc}")
    try:
        snapshot_id = await run_in_threadpool(
            save_snapshot, state(request).store, document, created_by=user_of(request)
        )
    except StoreError as exc:
        return await _upload_refused(request, 422, f"refused: {exc}")
    page = request.url_for("snapshot", snapshot_id=snapshot_id).path
    if wants_fragment(request):
        # htmx posted the form: have it load the new page as a whole.
        return Response(status_code=200, headers={"HX-Redirect": page})
    return RedirectResponse(page, 303)


async def _upload_refused(request: Request, status: int, message: str) -> HTMLResponse:
    context = {**await run_in_threadpool(_listed, state(request).store), "error": message}
    return render(request, "snapshots.html", context, fragment="_snapshot_upload_error.html", status_code=status)


def snapshot_page(request: Request) -> Response:
    store = state(request).store
    stored = find_snapshot(store, request.path_params["snapshot_id"])
    if stored.info.snapshot_id != request.path_params["snapshot_id"]:
        return RedirectResponse(request.url_for("snapshot", snapshot_id=stored.info.snapshot_id).path, 308)
    offset = _offset(request.query_params.get("frames", "0"))
    return render(request, "snapshot.html", snapshot_page_data(store, stored, offset))


def snapshot_json(request: Request) -> Response:
    store = state(request).store
    snapshot_id = request.path_params["snapshot_id"]
    stored = find_snapshot(store, snapshot_id)
    return Response(
        export_snapshot(store, stored.info.snapshot_id),
        media_type="application/json",
        headers={"Content-Disposition": f'attachment; filename="snapshot-{stored.info.snapshot_id[:12]}.json"'},
    )


async def fork_snapshot(request: Request) -> Response:
    """`POST /snapshots/<id>/fork`: a new snapshot with the form's edits, its parent recorded."""
    form = await form_of(request, max_fields=MAX_FORK_FIELDS)
    return await run_in_threadpool(_fork, request, form)


def _fork(request: Request, form: FormData) -> Response:
    store = state(request).store
    parent = find_snapshot(store, request.path_params["snapshot_id"])
    offset = _offset(str(form.get("frames", "0")))
    try:
        edits = _edits(form)
        forked = fork(dict(parent.snapshot), edits, parent_id=parent.info.snapshot_id)
        fork_id = save_snapshot(store, forked, parent_id=parent.info.snapshot_id, created_by=user_of(request))
    except (ForkError, StoreError) as exc:
        context = snapshot_page_data(store, parent, offset, error=str(exc))
        return render(request, "snapshot.html", context, status_code=422)
    return RedirectResponse(request.url_for("snapshot", snapshot_id=fork_id).path, 303)


def find_snapshot(store: Store, snapshot_id: str) -> StoredSnapshot:
    """The stored snapshot `snapshot_id`, or one a run dumped under that id (stored on first sight)."""
    if not SNAPSHOT_ID.fullmatch(snapshot_id):
        raise HTTPException(404, f"{snapshot_id[:80]!r} is not a snapshot id (64 hex digits)")
    try:
        return get_snapshot(store, snapshot_id)
    except NotFoundError:
        if snapshot_from_lake(store, snapshot_id):
            return get_snapshot(store, snapshot_id)
        dumped = dumped_snapshot(store, snapshot_id)
        if dumped is None:
            raise HTTPException(404, f"no snapshot {snapshot_id} in this DevTool") from None
    try:
        return get_snapshot(store, save_snapshot(store, dumped, created_by="dump_snapshot()"))
    except StoreError as exc:
        raise HTTPException(422, f"the run dumped snapshot {snapshot_id}, but it is malformed: {exc}") from None


def _edits(form: FormData) -> Edits:
    calls = {key.partition(".")[2]: str(value) for key, value in form.multi_items() if key.startswith("call.")}
    memory = {}
    for key, value in form.multi_items():
        if key.startswith("memory.") and str(value).strip():
            index = key.partition(".")[2]
            call_id = calls.get(index)
            if call_id is None:
                raise ForkError(f"the form's {key} belongs to no frame")
            memory[call_id] = parse_memory(str(value), call_id)
    drop = set()
    for value in form.getlist("drop"):
        index, kind, digest = str(value).split(":", 2) if str(value).count(":") >= 2 else ("", "", "")
        if index not in calls:
            raise ForkError(f"cannot drop {str(value)[:60]!r}: it names no frame of the form")
        drop.add((calls[index], kind, digest))
    entries = {}
    for key, value in form.multi_items():
        if key.startswith("output."):
            index, kind, digest = key.removeprefix("output.").split(":", 2) if key.count(":") >= 2 else ("", "", "")
            if index not in calls:
                raise ForkError(f"the form's {key[:60]} belongs to no frame")
            where = f"the {kind} output {digest[:12]}… of {calls[index]}"
            entries[(calls[index], kind, digest)] = parse_json(str(value), where)
    return Edits(memory=memory, drop=frozenset(drop), entries=entries)


def _offset(raw: str) -> int:
    return int(raw) if raw.isdigit() and len(raw) < 10 else 0


def replay_confirm(request: Request) -> HTMLResponse:
    store = state(request).store
    stored = find_snapshot(store, request.path_params["snapshot_id"])
    context = _confirm_context(request, store, stored)
    server_url = _server_url(request)
    if context["plan"] is not None and server_url is None:
        context["refusal"] = "this server does not know its own address, so a replay could not stream to it"
    elif context["plan"] is not None and server_url is not None:
        context["offer"] = state(request).replays.offer(context["plan"], server_url)
    return render(request, "replay_confirm.html", context)


async def replay_start(request: Request) -> Response:
    app = state(request)
    async with request.form(max_fields=5, max_files=0) as form:
        confirmation, page_token = str(form.get("confirm", "")), str(form.get(CSRF_FIELD, ""))
    # Of every client, a script with the team token too: a replay starts from a page a person was shown.
    if not app.access.is_page_token(page_token):
        raise HTTPException(403, "a replay starts from its confirm page: this request did not carry the page's token")
    offer = app.replays.redeem(confirmation)
    if offer is None or offer.plan.snapshot_id != request.path_params["snapshot_id"]:
        raise HTTPException(
            403,
            "this confirmation is not one this server made for this replay's page, or it was used or expired: "
            "open the replay page again and confirm what it shows",
        )
    stored = await run_in_threadpool(find_snapshot, app.store, request.path_params["snapshot_id"])
    context = await run_in_threadpool(_confirm_context, request, app.store, stored)
    plan: ReplayPlan | None = context["plan"]
    if plan is None:
        raise HTTPException(422, context["refusal"] or "this snapshot's run has no recorded entrypoint to replay")
    if plan.fingerprint != offer.plan.fingerprint:
        raise HTTPException(
            409, "what this replay would run changed since it was shown: look at it again before running it"
        )
    replay = await run_in_threadpool(app.replays.start, offer, actor=user_of(request))
    return RedirectResponse(request.url_for("replay", replay_id=replay.id).path, 303)


def replay_page(request: Request) -> Response:
    replay = _replay(request)
    if replay.trace_id is None:
        replay.trace_id = run_of_replay(state(request).store, replay.id)
    context = {"replay": replay, "returncode": replay.returncode, "log": replay.log_tail()}
    response = render(request, "replay.html", context, fragment="_replay_status.html")
    if replay.trace_id is not None and wants_fragment(request):
        # The run exists: open its page, where the rest of the replay streams in live.
        response.headers["HX-Redirect"] = run_url(replay.trace_id)
    return response


def _confirm_context(request: Request, store: Store, stored: StoredSnapshot) -> dict[str, Any]:
    trace_id = stored.top["provenance"].get("traceId")
    start = RunStart({}, {}, typescript=False)
    if isinstance(trace_id, str) and run_exists(store, trace_id):
        start = run_start(store, trace_id)
    entrypoint = start.metadata.get("entrypoint")
    props = start.props
    plan: ReplayPlan | None = None
    refusal: str | None = None
    snapshot_url = str(request.url_for("snapshot_json", snapshot_id=stored.info.snapshot_id))
    base_url = str(request.base_url).rstrip("/")
    if entrypoint is not None:
        try:
            declared = check_entrypoint(entrypoint, state(request).replays.root)
            plan = ReplayPlan(stored.info.snapshot_id, trace_id, entrypoint, props, declared, start.name)
        except ReplayRefused as exc:
            refusal = str(exc)
    return {
        "info": stored.info,
        "trace_id": trace_id,
        "entrypoint": entrypoint,
        "props": props,
        "typescript": start.typescript,
        "plan": plan,
        "offer": None,
        "refusal": refusal,
        "root": state(request).replays.root,
        "token_passed": state(request).replays.token is not None,
        "snapshot_url": snapshot_url,
        "base_url": base_url,
        "by_hand": by_hand(entrypoint, props, snapshot_url, base_url, start.name),
    }


def _replay(request: Request) -> Replay:
    replays = state(request).replays
    replay = replays.get(request.path_params["replay_id"])
    if replay is None:
        raise HTTPException(404, "no such replay on this server (replays are kept until it restarts)")
    return replay


def _server_url(request: Request) -> str | None:
    """Where the child reaches this server: the address the request came in on, on this machine."""
    server = request.scope.get("server")
    if not server or server[1] is None:
        return None
    host, port = server[0], server[1]
    shown = f"[{host}]" if ":" in host else host
    return f"{request.url.scheme}://{shown}:{port}"


routes = [
    Route("/snapshots", snapshots_page, name="snapshots"),
    Route("/snapshots", upload_snapshot, methods=["POST"], name="snapshot_upload"),
    Route("/snapshots/{snapshot_id}.json", snapshot_json, name="snapshot_json"),
    Route("/snapshots/{snapshot_id}", snapshot_page, name="snapshot"),
    Route("/snapshots/{snapshot_id}/fork", fork_snapshot, methods=["POST"], name="snapshot_fork"),
    Route("/snapshots/{snapshot_id}/replay", replay_confirm, name="replay_confirm"),
    Route("/snapshots/{snapshot_id}/replay", replay_start, methods=["POST"], name="replay_start"),
    Route("/replays/{replay_id}", replay_page, name="replay"),
]
