"""The run page: timeline, frame tree and detail of one trace, with its state in the URL.

`/runs/<trace_id>?span=&start=&end=` is the whole page; an htmx request for it gets the workspace
(the three panes) and pushes the URL, which is how selecting a span works. Zooming asks for the
timeline alone (`/timeline`), which replaces the URL so a reload or a copied link shows the same
window. The tree loads further pages of children on demand (`/tree/<span>/children`).
"""

from __future__ import annotations

import time
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from devtool.store import NotFoundError, Store
from devtool.store.queries import RunSummary, TimelineWindow, get_run, last_event_id, timeline_window
from devtool.store.queries.navigation import search_spans
from devtool.web.run_state import BadViewState, RunView
from devtool.web.span_view import span_view
from devtool.web.templating import render, wants_fragment
from devtool.web.timeline_layout import TimelineLayout, layout
from devtool.web.tree_view import children_page, run_tree

DEFAULT_WIDTH = 1200
WIDTH_COOKIE = "devtool_timeline_width"
# The timeline's element budget: every bar is one <rect> (a label only when it is wide enough to
# hold one, so few), and the axis a line and a label a tick: under 5,000 elements at any zoom.
MAX_BARS = 3800  # + MAX_LABELS (800) + the axis: under 5,000
OVERVIEW_WIDTH = 240
LIVE_WITHIN_MS = 10 * 60 * 1000


def run_page(request: Request) -> HTMLResponse:
    store: Store = request.app.state.store
    trace_id, view = _trace_and_view(request)
    # Read first: the page's live stream starts after it, so nothing stored while it renders is missed.
    live_after = last_event_id(store)
    run = _or_404(get_run, store, trace_id)
    if run.kind != "trace":
        raise HTTPException(404, f"{trace_id} is a process journal: see /processes/{trace_id}")
    drawn, window = _timeline(store, run, view, _width(request))
    context = {
        **_selection(store, run, view),
        "timeline": drawn,
        "overview": _overview(store, run, window),
        "live_after": live_after,
    }
    response = render(request, "run.html", context, fragment="_workspace.html")
    if wants_fragment(request):
        response.headers["HX-Push-Url"] = view.url(trace_id)
    return response


def selection(request: Request) -> HTMLResponse:
    """The tree and the detail for a newly selected span; the page keeps its timeline (and marks the span)."""
    store: Store = request.app.state.store
    trace_id, view = _trace_and_view(request)
    run = _or_404(get_run, store, trace_id)
    response = render(request, "_selection.html", _selection(store, run, view))
    response.headers["HX-Push-Url"] = view.url(trace_id)
    return response


def timeline_fragment(request: Request) -> HTMLResponse:
    store: Store = request.app.state.store
    trace_id, view = _trace_and_view(request)
    run = _or_404(get_run, store, trace_id)
    context = {"view": view, "run": run, "timeline": _timeline(store, run, view, _width(request))[0]}
    response = render(request, "_timeline.html", context)
    response.headers["HX-Replace-Url"] = view.url(trace_id)
    return response


def run_header(request: Request) -> HTMLResponse:
    """The header alone: what a live run's page refreshes as events arrive."""
    trace_id, _ = _trace_and_view(request)
    return render(request, "_run_header.html", {"run": _or_404(get_run, request.app.state.store, trace_id)})


def tree_fragment(request: Request) -> HTMLResponse:
    """The frame tree alone, opened to the selected span: what a live run's page refreshes."""
    store: Store = request.app.state.store
    trace_id, view = _trace_and_view(request)
    run = _or_404(get_run, store, trace_id)
    tree, path = run_tree(store, trace_id, view.span)
    context = {"run": run, "view": view, "tree": tree, "path": {step.span_id for step in path}}
    return render(request, "_tree.html", context)


def tree_children(request: Request) -> HTMLResponse:
    store: Store = request.app.state.store
    trace_id, view = _trace_and_view(request)
    offset = _int(request.query_params.get("offset", "0"), "offset")
    node = _or_404(children_page, store, trace_id, request.path_params["span_id"], offset)
    return render(request, "_tree_children.html", {"run_id": trace_id, "view": view, "node": node, "path": set()})


def span_search(request: Request) -> HTMLResponse:
    store: Store = request.app.state.store
    trace_id, view = _trace_and_view(request)
    text = request.query_params.get("q", "").strip()[:200]
    hits = search_spans(store, trace_id, text) if text else []
    return render(request, "_span_search.html", {"run_id": trace_id, "view": view, "hits": hits, "q": text})


def _selection(store: Store, run: RunSummary, view: RunView) -> dict[str, Any]:
    """What the tree and the detail pane show: the tree opened down to the selected span, and its detail."""
    tree, path = run_tree(store, run.id, view.span)
    return {
        "run": run,
        "view": view,
        "tree": tree,
        "path": {step.span_id for step in path},
        "detail": _or_404(span_view, store, run.id, view.span, path) if view.span else None,
    }


def _timeline(store: Store, run: RunSummary, view: RunView, width: int) -> tuple[TimelineLayout, TimelineWindow]:
    # One query, bounded by the element budget: the store buckets coarser than the pane when rows ×
    # pixels would pass it, and the layout draws the bars at the pane's width.
    window = _or_404(
        timeline_window, store, run.id, start_ms=view.start, end_ms=view.end, width_px=width, max_bars=MAX_BARS
    )
    now = time.time() * 1000
    # Running spans of a live run grow to now; those of a run that stopped long ago stop at its last event.
    live = run.status == "running" and now - run.ended_ms < LIVE_WITHIN_MS
    return layout(window, width=width, now_ms=now if live else None), window


def _overview(store: Store, run: RunSummary, shown: TimelineWindow) -> dict[str, Any]:
    """The whole run as a density strip: spans per column, for the overview above the timeline.

    When the page shows the whole run, its bars already say where the spans are; only a page opened
    on a zoomed window asks the store again.
    """
    whole = shown.start_ms <= run.started_ms and shown.end_ms >= run.ended_ms
    window = shown if whole else timeline_window(store, run.id, width_px=OVERVIEW_WIDTH)
    counts = [0] * OVERVIEW_WIDTH
    failed = [0] * OVERVIEW_WIDTH
    total = max(window.run_end_ms - window.run_start_ms, 1e-9)
    for bar in window.bars:
        column = min(OVERVIEW_WIDTH - 1, int((bar.start_ms - window.run_start_ms) / total * OVERVIEW_WIDTH))
        counts[column] += bar.count
        failed[column] += bar.failed
    peak = max(counts, default=0) or 1
    return {"width": OVERVIEW_WIDTH, "columns": list(enumerate(zip(counts, failed, strict=True))), "peak": peak}


def _trace_and_view(request: Request) -> tuple[str, RunView]:
    try:
        return request.path_params["trace_id"], RunView.from_query(request.query_params)
    except BadViewState as exc:
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
    Route("/runs/{trace_id:id}/select", selection, name="run_select"),
    Route("/runs/{trace_id:id}/timeline", timeline_fragment, name="run_timeline"),
    Route("/runs/{trace_id:id}/header", run_header, name="run_header"),
    Route("/runs/{trace_id:id}/tree", tree_fragment, name="run_tree"),
    Route("/runs/{trace_id:id}/tree/{span_id}/children", tree_children, name="run_tree_children"),
    Route("/runs/{trace_id:id}/search", span_search, name="run_search"),
]
