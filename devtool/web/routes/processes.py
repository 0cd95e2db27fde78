"""A process journal, `/processes/<process_id>` and its rewind: the chart, the table, an entry's state.

The chart has a lane per kind of entry (lifecycle, triggers, invocations, context, conversation, tools,
checkpoints and rewinds, errors, and any other type as it is), and under it a row per invocation
whose entries carry a `trace_id`; an opened invocation shows that run's spans on the same axis, so
the webhook that fired in the middle of a run is drawn above the agent call it corrupted. A span
links to its run page. `?entry=` selects an entry: the detail panel shows the state just before and
just after it (context, lifecycle, conversation), rebuilt by the journal's rewind engine without
recording anything. All of it is in the URL (`pages/process_url_state.py`); links inside the
workspace are boosted by htmx, which swaps the workspace and pushes the URL.

- `/processes/<process_id>/rewind?entry=&mode=[&confirm=1]`: the fragment the detail panel loads into
  `.entry-actions`: the entries a rewind to just before the entry reaches and what the mode does to
  each, where Apply would write, and Apply (with `confirm=1`: the question, naming that file); or
  what a `rewind` entry did (`pages/process_rewind_panel.py`). `POST` (form `entry`, `mode`, and
  `to`: the file or folder the user confirmed) applies it, unless it would now go elsewhere
  (`devtool.actions.process_rewind` says where it is recorded), with the signed-in user as the actor,
  and goes back to the process page with the new `rewind` entry selected.
- `/process-rewind?process=&entry=` (the rewind's first address) answers a redirect to the above:
  308 for GET; 307 for POST, whose target depends on the form it carries, not on its URL.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from devtool.actions.process_rewind import ProcessRewindError, apply_rewind_here
from devtool.journal import RewindMode
from devtool.store import NotFoundError
from devtool.store.queries import get_run
from devtool.store.queries.journal_lane import journal_invocations, journal_span
from devtool.web.auth import user_of
from devtool.web.forms import form_of
from devtool.web.links import process_url
from devtool.web.pages.entry_detail import build_detail
from devtool.web.pages.entry_table import build_table
from devtool.web.pages.journal_words import LANES
from devtool.web.pages.process_chart import build_chart
from devtool.web.pages.process_rewind_panel import rewind_panel
from devtool.web.pages.process_url_state import ProcessUrlState
from devtool.web.pages.run_url_state import BadUrlState
from devtool.web.state import state
from devtool.web.templating import render


def process_page(request: Request) -> HTMLResponse:
    store = state(request).store
    process_id: str = request.path_params["process_id"]
    try:
        url_state = ProcessUrlState.from_query(request.query_params, opened=request.query_params.getlist("open"))
    except BadUrlState as exc:
        raise HTTPException(400, str(exc)) from None
    try:
        span = journal_span(store, process_id)
        summary = get_run(store, process_id, kind="journal")
        detail = build_detail(store, process_id, url_state.entry, span) if url_state.entry is not None else None
    except NotFoundError as exc:
        raise HTTPException(404, str(exc)) from None
    invocations = journal_invocations(store, process_id)
    context: dict[str, Any] = {
        "process_id": process_id,
        "summary": summary,
        "view": url_state,
        "chart": build_chart(store, process_id, url_state, span, invocations),
        "table": build_table(store, process_id, url_state, span),
        "detail": detail,
        "invocation_count": len(invocations),
        "lanes": LANES,
        "self_url": url_state.url(process_id),
    }
    return render(request, "process.html", context, fragment="_process_workspace.html")


def process_rewind_panel(request: Request) -> HTMLResponse:
    process_id = request.path_params["process_id"]
    entry_id = _entry(request.query_params.get("entry"))
    mode = request.query_params.get("mode") or RewindMode.BOTH.value
    confirm = request.query_params.get("confirm") == "1"
    try:
        context = rewind_panel(state(request).store, process_id, entry_id, mode, confirm=confirm)
    except NotFoundError as exc:
        raise HTTPException(404, str(exc)) from None
    return render(request, "_process_rewind.html", context)


async def process_rewind_apply(request: Request) -> Response:
    process_id = request.path_params["process_id"]
    form = await form_of(request, max_fields=6)
    entry_id = _entry(form.get("entry"))
    mode = str(form.get("mode", ""))
    shown = form.get("to")
    if not isinstance(shown, str) or not shown:
        raise HTTPException(
            400, "a process rewind needs `to`: the journal file it was shown to go to (confirm it on the process page)"
        )
    try:
        applied = await run_in_threadpool(
            apply_rewind_here,
            state(request).store,
            process_id,
            entry_id,
            mode,
            actor=user_of(request),
            expected=Path(shown),
        )
    except ProcessRewindError as exc:
        raise HTTPException(422, f"cannot rewind {process_id} to {entry_id}: {exc}") from None
    return RedirectResponse(process_url(process_id, entry=applied.result.rewind_entry_id), 303)


async def old_process_rewind(request: Request) -> Response:
    """`/process-rewind?process=&entry=` (and its POST, `process` in the form): where it moved to."""
    if request.method == "GET":
        query = dict(request.query_params)
        process_id = query.pop("process", "")
        return RedirectResponse(process_url(_process(process_id), "rewind", **query), 308)
    form = await form_of(request, max_fields=6)
    return RedirectResponse(process_url(_process(form.get("process")), "rewind"), 307)


def _process(process: Any) -> str:
    if not isinstance(process, str) or not process:
        raise HTTPException(400, "a process rewind needs `process`: the id of the process journal")
    return process


def _entry(entry: Any) -> str:
    if not isinstance(entry, str) or not entry:
        raise HTTPException(400, "a process rewind needs `entry`: the entry to rewind to")
    return entry


routes = [
    Route("/processes/{process_id:id}", process_page, name="process"),
    Route("/processes/{process_id:id}/rewind", process_rewind_panel, name="process_rewind"),
    Route("/processes/{process_id:id}/rewind", process_rewind_apply, methods=["POST"], name="process_rewind_apply"),
    Route("/process-rewind", old_process_rewind, methods=["GET", "POST"], name="old_process_rewind"),
]
