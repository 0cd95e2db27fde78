"""The process page `/processes/<process_id>`: a journal on a time axis, its entries, an entry's state.

The chart has a lane per kind of entry (lifecycle, triggers, invocations, context, conversation, tools,
checkpoints and rewinds, errors, and any other type as it is), and under it a row per invocation
whose entries carry a `trace_id`; an opened invocation shows that run's spans on the same axis, so
the webhook that fired in the middle of a run is drawn above the agent call it corrupted. A span
links to its run page. `?entry=` selects an entry: the detail panel shows the state just before and
just after it (context, lifecycle, conversation), rebuilt by the journal's rewind engine without
recording anything. All of it is in the URL (see `process_state.py`); links inside the workspace are
boosted by htmx, which swaps the workspace and pushes the URL.

Issue 9 hangs the rewind plan and its Apply button in the detail panel's `.entry-actions`.
"""

from __future__ import annotations

from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from devtool.store import NotFoundError, Store
from devtool.store.queries import get_run
from devtool.store.queries.journal_lane import journal_invocations, journal_span
from devtool.web.entry_state import build_detail
from devtool.web.journal_words import LANES
from devtool.web.process_state import ProcessView
from devtool.web.process_view import build_chart, build_table
from devtool.web.run_state import BadViewState
from devtool.web.templating import render


def process_page(request: Request) -> HTMLResponse:
    store: Store = request.app.state.store
    process_id: str = request.path_params["process_id"]
    try:
        view = ProcessView.from_query(request.query_params)
    except BadViewState as exc:
        raise HTTPException(400, str(exc)) from None
    try:
        span = journal_span(store, process_id)
        summary = get_run(store, process_id, kind="journal")
        detail = build_detail(store, process_id, view.entry, span) if view.entry is not None else None
    except NotFoundError as exc:
        raise HTTPException(404, str(exc)) from None
    invocations = journal_invocations(store, process_id)
    context: dict[str, Any] = {
        "process_id": process_id,
        "summary": summary,
        "view": view,
        "chart": build_chart(store, process_id, view, span, invocations),
        "table": build_table(store, process_id, view, span),
        "detail": detail,
        "invocation_count": len(invocations),
        "lanes": LANES,
        "self_url": view.url(process_id),
    }
    return render(request, "process.html", context, fragment="_process_workspace.html")


routes = [Route("/processes/{process_id:id}", process_page, name="process")]
