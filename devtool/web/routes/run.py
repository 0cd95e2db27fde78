"""A run, `/runs/<trace_id>` and everything under it: the page and its panes, and what its buttons do.

`/runs/<trace_id>?span=&start=&end=` is the whole page; an htmx request for it gets the workspace
(the three panes) and pushes the URL. `&pick=<row>,<from>,<to>,<kind>` (a click on a merged bar of
the timeline) selects the first span of that kind and row in that time; the pushed URL names it.
Zooming asks for the timeline alone (`/timeline`), which replaces the URL so a reload or a copied
link shows the same window. The tree loads further pages of children on demand (`/tree/<span>/children`). A live run's
page follows `/live` (Server-Sent Events, see `devtool.web.live.streams`) and refreshes `/header`
and `/tree` on its messages, and a selected running turn its answer so far (`/spans/<span>/answer`).
A span's detail asks for the tokens and cost of the model calls under it (`/spans/<span>/usage`)
after it has shown: on a big run that is a walk of the span's subtree.

- `POST /runs/<trace_id>/rewind` (form `span_id`, `anchor`): the run's snapshot at that cut, stored
  under its content id (`devtool.actions.run_rewind`) → 303 to `/snapshots/<id>`.
- `/runs/<trace_id>/actions`: the run header's buttons (copy link, export, snapshots the run dumped,
  its replays and forks by name, and for a replay: its snapshot, its original and "compare with original").
  `/runs/<prefix>` (the short id the UI shows) redirects to the run's whole id (`routes/compare.py`
  has `/runs/<trace_id>/compare`).
- `/runs/<trace_id>/export.jsonl.gz`: the run's events to hand to a teammate (`devtool load` reads it);
  `export.otlp.jsonl` the run as OTLP JSON (Jaeger, Tempo, Phoenix), `export.perfetto.json` as Chrome
  trace-event JSON (Perfetto UI).
"""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from devtool.actions.run_rewind import LakeNeeded, RewindError, rewind
from devtool.store import NotFoundError, Store
from devtool.store.export import export_run, export_run_otlp, export_run_perfetto
from devtool.store.queries import get_run
from devtool.store.queries.cause import run_faults
from devtool.store.queries.find import find_in_run
from devtool.store.queries.lineage import lineages, named_replays
from devtool.store.queries.live import derived_through
from devtool.store.queries.navigation import first_span_in, search_spans
from devtool.store.queries.replay_calls import replay_calls, unrecorded_spans
from devtool.store.queries.replay_saving import replay_saving
from devtool.store.queries.run_ids import AmbiguousRunError, resolve_run
from devtool.store.queries.run_meta import run_exists, run_metadata, snapshot_dumps
from devtool.store.queries.runs import lake_listed
from devtool.store.queries.usage import span_usage
from devtool.web.auth import user_of
from devtool.web.forms import form_of
from devtool.web.lake_open import copy_rest, copying, run_from_lake, span_from_lake
from devtool.web.links import run_url
from devtool.web.live.streams import RunFeed, event_id, sse_response
from devtool.web.pages.frame_tree import children_page, run_tree
from devtool.web.pages.run_url_state import BadUrlState, RunUrlState
from devtool.web.pages.run_workspace import overview, selected_span, selection, timeline
from devtool.web.pages.span_detail import turn_answer
from devtool.web.state import state
from devtool.web.templating import render, wants_fragment

DEFAULT_WIDTH = 1200
WIDTH_COOKIE = "devtool_timeline_width"


def run_page(request: Request) -> Response:
    store = state(request).store
    trace_id, url_state = _trace_and_state(request)
    if not run_exists(store, trace_id) and not run_from_lake(store, trace_id):
        return _by_prefix(request, store, trace_id)
    if (copied := copying(store, trace_id)) is not None:
        span_from_lake(store, trace_id, url_state.span)
    if "pick" in request.query_params:
        # A click on a merged bar: select the first span it holds (the URL then names that span).
        url_state = _picked(store, trace_id, url_state, request.query_params["pick"])
        if not wants_fragment(request):
            return RedirectResponse(url_state.url(trace_id), 303)
    # Read first: the page's live stream starts after the last event its spans cover, so nothing stored
    # meanwhile is missed, nor what a live run's page shows before its derive (`live/settled.py`).
    live_after = derived_through(store, trace_id)
    run = _or_404(get_run, store, trace_id)
    if run.kind != "trace":
        raise HTTPException(404, f"{trace_id} is a process journal: see /processes/{trace_id}")
    chosen = _or_404(selection, store, run, url_state)
    drawn, window = _or_404(timeline, store, run, url_state, _width(request), chosen["selected"])
    context = {
        **chosen,
        "timeline": drawn,
        "overview": overview(store, run, window),
        "live_after": live_after,
        "saving": replay_saving(store, run),
        "lake_copying": copied and copying(store, trace_id),
    }
    context["lake_run"] = context["lake_copying"] and lake_listed(store, trace_id)
    response = render(request, "run.html", context, fragment="_workspace.html")
    if copied is not None:
        copy_rest(response, store, context["lake_copying"] or copied)
    if wants_fragment(request):
        response.headers["HX-Push-Url"] = url_state.url(trace_id)
    return response


def run_selection(request: Request) -> HTMLResponse:
    """The tree and the detail for a newly selected span; the page keeps its timeline (and marks the span)."""
    store = state(request).store
    trace_id, url_state = _trace_and_state(request)
    run = _or_404(get_run, store, trace_id)
    response = render(request, "_selection.html", _or_404(selection, store, run, url_state))
    response.headers["HX-Push-Url"] = url_state.url(trace_id)
    return response


def run_detail(request: Request) -> HTMLResponse:
    """The selected span's detail again (in its selection, which the page picks it from), the URL
    unchanged: what the detail pane of a span still running refreshes with as the run streams."""
    store = state(request).store
    trace_id, url_state = _trace_and_state(request)
    run = _or_404(get_run, store, trace_id)
    return render(request, "_selection.html", _or_404(selection, store, run, url_state))


def run_timeline(request: Request) -> HTMLResponse:
    store = state(request).store
    trace_id, url_state = _trace_and_state(request)
    run = _or_404(get_run, store, trace_id)
    drawn, _ = _or_404(timeline, store, run, url_state, _width(request), selected_span(store, run, url_state))
    response = render(request, "_timeline.html", {"view": url_state, "run": run, "timeline": drawn})
    response.headers["HX-Replace-Url"] = url_state.url(trace_id)
    return response


def run_header(request: Request) -> HTMLResponse:
    """The header alone: what a live run's page refreshes as events arrive (and one being copied from
    the lake, as its copy goes)."""
    trace_id, _ = _trace_and_state(request)
    store = state(request).store
    lake_copying = copying(store, trace_id)
    run = _or_404(get_run, store, trace_id)
    context = {
        "run": run,
        "saving": replay_saving(store, run),
        "lake_copying": lake_copying,
        "lake_run": lake_copying and lake_listed(store, trace_id),
    }
    return render(request, "_run_header.html", context)


def run_tree_fragment(request: Request) -> HTMLResponse:
    """The frame tree alone, opened to the selected span: what a live run's page refreshes."""
    store = state(request).store
    trace_id, url_state = _trace_and_state(request)
    run = _or_404(get_run, store, trace_id)
    tree, path = run_tree(store, trace_id, url_state.span)
    path_ids = {step.span_id for step in path}
    context = {"run": run, "view": url_state, "tree": tree, "path": path_ids, "faults": run_faults(store, trace_id)}
    context["unrecorded_spans"] = unrecorded_spans(store, trace_id)
    return render(request, "_tree.html", context)


def run_tree_children(request: Request) -> HTMLResponse:
    store = state(request).store
    trace_id, url_state = _trace_and_state(request)
    offset = _int(request.query_params.get("offset", "0"), "offset")
    node = _or_404(children_page, store, trace_id, request.path_params["span_id"], offset)
    faults = run_faults(store, trace_id)
    context = {"run_id": trace_id, "view": url_state, "node": node, "path": set(), "faults": faults}
    context["unrecorded_spans"] = unrecorded_spans(store, trace_id)
    return render(request, "_tree_children.html", context)


def run_span_usage(request: Request) -> HTMLResponse:
    """The tokens and cost of the model calls under a span, rolled up (its detail asks once shown)."""
    store = state(request).store
    trace_id, _ = _trace_and_state(request)
    run = _or_404(get_run, store, trace_id)
    usage = span_usage(store, trace_id, request.path_params["span_id"])
    return render(request, "_span_usage.html", {"run": run, "usage": usage, "span_id": request.path_params["span_id"]})


def run_turn_answer(request: Request) -> HTMLResponse:
    """A turn's answer: so far while its model streams (refreshed on live messages), then the whole."""
    store = state(request).store
    trace_id, _ = _trace_and_state(request)
    run = _or_404(get_run, store, trace_id)
    detail = _or_404(turn_answer, store, trace_id, request.path_params["span_id"])
    return render(request, "_turn_answer.html", {"run": run, "detail": detail, "oob": True})


def run_search(request: Request) -> HTMLResponse:
    store = state(request).store
    trace_id, url_state = _trace_and_state(request)
    text = request.query_params.get("q", "").strip()[:200]
    hits = search_spans(store, trace_id, text) if text else []
    # And the text inside its spans (messages, answers, tools, memory, errors): `queries/find.py`.
    found = _or_404(find_in_run, store, trace_id, text)
    inside = [hit for hit in found.hits if hit.field != "name"]
    context = {"run_id": trace_id, "view": url_state, "hits": hits, "inside": inside, "found": found, "q": text}
    return render(request, "_span_search.html", context)


async def run_rewind(request: Request) -> Response:
    """`POST /runs/<trace_id>/rewind`: snapshot the run at a span's start or end, go to its page."""
    trace_id = request.path_params["trace_id"]
    form = await form_of(request)
    # A tool result of a batch is selected as `<span>#<index>`: the cut is the batch's span.
    span_id = str(form.get("span_id", "")).partition("#")[0]
    anchor = str(form.get("anchor", ""))
    if not span_id:
        raise HTTPException(400, "rewind needs span_id: the span to rewind to")
    try:
        snapshot_id = await run_in_threadpool(
            rewind, state(request).store, trace_id, span_id, anchor, created_by=user_of(request)
        )
    except NotFoundError as exc:
        raise HTTPException(404, str(exc)) from None
    except LakeNeeded as exc:
        raise HTTPException(409, f"cannot rewind to {anchor} span {span_id} yet: {exc}") from None
    except RewindError as exc:
        raise HTTPException(422, f"cannot rewind to {anchor} span {span_id}: {exc}") from None
    return RedirectResponse(request.url_for("snapshot", snapshot_id=snapshot_id).path, 303)


def run_actions(request: Request) -> HTMLResponse:
    """The run header's actions fragment."""
    store = state(request).store
    trace_id = request.path_params["trace_id"]
    metadata = _metadata(store, trace_id)
    replay = metadata.get("replay") if isinstance(metadata.get("replay"), dict) else None
    original = replay.get("originalTraceId") if replay else None
    original = original if isinstance(original, str) and run_exists(store, original) else None
    run = get_run(store, trace_id)
    context: dict[str, Any] = {
        "trace_id": trace_id,
        "started_ms": run.started_ms,
        "ended_ms": run.ended_ms,
        "entrypoint": metadata.get("entrypoint") if isinstance(metadata.get("entrypoint"), str) else None,
        "replay": replay,
        "original": original,
        "dumps": snapshot_dumps(store, trace_id),
        "replays": named_replays(store, trace_id),
        "lineage": lineages(store, [trace_id]).get(trace_id) if replay else None,
        "original_name": get_run(store, original).name if original else None,
        "replay_calls": replay_calls(store, trace_id),
    }
    return render(request, "_run_actions.html", context)


# The run's downloads: how each is written, its media type, and its file name's ending.
_EXPORTS = {
    "export.jsonl.gz": (export_run, "application/gzip", ".trace.jsonl.gz"),
    "export.otlp.jsonl": (export_run_otlp, "application/x-ndjson", ".otlp.jsonl"),
    "export.perfetto.json": (export_run_perfetto, "application/json", ".perfetto.json"),
}


async def run_export(request: Request) -> Response:
    trace_id: str = request.path_params["trace_id"]
    write, media_type, suffix = _EXPORTS[request.url.path.rsplit("/", 1)[-1]]
    try:
        chunks = await run_in_threadpool(write, state(request).store, trace_id)
    except NotFoundError as exc:
        raise HTTPException(404, str(exc)) from None
    name = "".join(c if c.isalnum() or c in "-_." else "_" for c in trace_id)[:80] or "run"
    return StreamingResponse(
        chunks, media_type=media_type, headers={"Content-Disposition": f'attachment; filename="{name}{suffix}"'}
    )


async def run_live(request: Request) -> Response:
    app = state(request)
    drawn = request.query_params.get("spans")
    checked = None if drawn is None else event_id("spans", drawn)
    if isinstance(checked, Response):
        return checked
    feed = RunFeed(app.store, request.path_params["trace_id"], app.settings.live_interval, drawn=checked)
    return sse_response(request, feed)


def _by_prefix(request: Request, store: Store, given: str) -> Response:
    """`/runs/<prefix>`: the run whose id starts with the short id the UI shows, at its whole id."""
    try:
        whole = resolve_run(store, given)
    except NotFoundError as exc:
        raise HTTPException(404, str(exc)) from None
    except AmbiguousRunError as exc:
        raise HTTPException(400, str(exc)) from None
    query = f"?{request.url.query}" if request.url.query else ""
    return RedirectResponse(run_url(whole) + query, 303)


def _picked(store: Store, trace_id: str, url_state: RunUrlState, pick: str) -> RunUrlState:
    """`pick=<row>,<from ms>,<to ms>,<kind>`: the first span of that kind and row in that time, selected."""
    parts = pick.split(",", 3)
    try:
        row, start, end, kind = int(parts[0]), float(parts[1]), float(parts[2]), parts[3]
    except (ValueError, IndexError):
        raise HTTPException(400, f"pick must be <row>,<from ms>,<to ms>,<kind>, not {pick[:80]!r}") from None
    found = first_span_in(store, trace_id, row, kind, start, end)
    return url_state.with_span(found) if found is not None else url_state


def _metadata(store: Store, trace_id: str) -> dict[str, Any]:
    """What the run recorded in `runWith:start` (entrypoint, replay of...); a 404 when there is no such run."""
    try:
        return run_metadata(store, trace_id)
    except NotFoundError as exc:
        raise HTTPException(404, str(exc)) from None


def _trace_and_state(request: Request) -> tuple[str, RunUrlState]:
    try:
        return request.path_params["trace_id"], RunUrlState.from_query(request.query_params)
    except BadUrlState as exc:
        raise HTTPException(400, str(exc)) from None


def _width(request: Request) -> int:
    raw = request.query_params.get("w") or request.cookies.get(WIDTH_COOKIE) or ""
    return min(max(_int(raw, "w"), 200), 4000) if raw.isdigit() else DEFAULT_WIDTH


def _int(raw: str, name: str) -> int:
    try:
        return int(raw)
    except ValueError:
        raise HTTPException(400, f"{name} must be a whole number, not {raw[:40]!r}") from None


def _or_404(query: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        return query(*args, **kwargs)
    except NotFoundError as exc:
        raise HTTPException(404, str(exc)) from None
    except ValueError as exc:
        raise HTTPException(400, str(exc)) from None


routes = [
    Route("/runs/{trace_id:id}", run_page, name="run"),
    Route("/runs/{trace_id:id}/select", run_selection, name="run_select"),
    Route("/runs/{trace_id:id}/detail", run_detail, name="run_detail"),
    Route("/runs/{trace_id:id}/timeline", run_timeline, name="run_timeline"),
    Route("/runs/{trace_id:id}/header", run_header, name="run_header"),
    Route("/runs/{trace_id:id}/tree", run_tree_fragment, name="run_tree"),
    Route("/runs/{trace_id:id}/tree/{span_id}/children", run_tree_children, name="run_tree_children"),
    Route("/runs/{trace_id:id}/spans/{span_id}/usage", run_span_usage, name="run_span_usage"),
    Route("/runs/{trace_id:id}/spans/{span_id}/answer", run_turn_answer, name="run_turn_answer"),
    Route("/runs/{trace_id:id}/search", run_search, name="run_search"),
    Route("/runs/{trace_id:id}/rewind", run_rewind, methods=["POST"], name="rewind"),
    Route("/runs/{trace_id:id}/actions", run_actions, name="run_actions"),
    Route("/runs/{trace_id:id}/export.jsonl.gz", run_export, name="run_export"),
    Route("/runs/{trace_id:id}/export.otlp.jsonl", run_export, name="run_export_otlp"),
    Route("/runs/{trace_id:id}/export.perfetto.json", run_export, name="run_export_perfetto"),
    Route("/runs/{trace_id:id}/live", run_live, name="run_live"),
]
