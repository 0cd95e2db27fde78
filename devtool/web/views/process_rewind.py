"""Rewind on the process page: the plan for the selected entry, and Apply.

`/process-rewind?process=&entry=&mode=` is the fragment the process page's detail panel loads into
`.entry-actions`: the blast radius of rewinding to just before the entry (entries, conversation and
code/state counts, from `RewindEngine.plan`), a mode, and Apply. For a `rewind` entry it says what
that rewind did and shows the state it left (its checkpoint). `POST /process-rewind` applies it
(`process_rewind.py` says where it is recorded), with the signed-in user as the actor, and goes back
to the process page with the new `rewind` entry selected. (Query parameters, not a path under
`/processes/<id>/`, because a process id may itself hold slashes.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from devtool.journal import RewindMode
from devtool.store import Store
from devtool.store.queries import StoredEntry, journal_entries
from devtool.store.queries.journal_files import entry_source
from devtool.web.auth import user_of
from devtool.web.links import process_url
from devtool.web.process_rewind import ProcessRewindError, apply_rewind_here, plan_rewind
from devtool.web.templating import render

MODE_WORDS = {
    RewindMode.BOTH: "both: state and conversation as they were before",
    RewindMode.CONVERSATION_ONLY: "conversation only: keep the state, take back the conversation",
    RewindMode.CODE_ONLY: "code only: take back the state, keep the conversation",
    RewindMode.SUMMARIZE: "summarize: keep both, add a note summarizing what happened",
}


def rewind_panel(request: Request) -> HTMLResponse:
    store: Store = request.app.state.store
    process_id, entry_id = _ids(request.query_params.get("process"), request.query_params.get("entry"))
    mode = request.query_params.get("mode") or RewindMode.BOTH.value
    context: dict[str, Any] = {
        "process_id": process_id,
        "entry_id": entry_id,
        "mode": mode,
        "modes": MODE_WORDS,
        "error": None,
    }
    entries = journal_entries(store, process_id, limit=1 << 62)
    entry = next((e for e in entries if e.entry_id == entry_id), None)
    if entry is None:
        raise HTTPException(404, f"no entry {entry_id!r} in process journal {process_id!r}")
    context["entry"] = entry
    if entry.entry_type == "rewind":
        context["rewound"] = _state_after(entries, entry)
        recorded_in = entry_source(store, process_id, entry_id)
        context["recorded_in"] = recorded_in
        context["devtool_only"] = recorded_in is not None and recorded_in.parent == rewinds_dir(store)
        return render(request, "_process_rewind.html", context)
    try:
        context["plan"] = plan_rewind(store, process_id, entry_id, mode)
    except ProcessRewindError as exc:
        context["error"] = str(exc)
    return render(request, "_process_rewind.html", context)


async def apply(request: Request) -> Response:
    async with request.form(max_fields=6, max_files=0) as form:
        process_id, entry_id = _ids(form.get("process"), form.get("entry"))
        mode = str(form.get("mode", ""))
    store: Store = request.app.state.store
    try:
        applied = await run_in_threadpool(
            apply_rewind_here, store, process_id, entry_id, mode, actor=user_of(request), rewinds_dir=rewinds_dir(store)
        )
    except ProcessRewindError as exc:
        raise HTTPException(422, f"cannot rewind {process_id} to {entry_id}: {exc}") from None
    return RedirectResponse(process_url(process_id, entry=applied.result.rewind_entry_id), 303)


def rewinds_dir(store: Store) -> Path:
    """Where rewinds the DevTool records on its own (see `process_rewind.py`): beside its database."""
    return store.path.parent / f"{store.path.stem}-rewinds"


def _state_after(entries: list[StoredEntry], rewind: StoredEntry) -> dict[str, Any] | None:
    """The state a rewind left: the checkpoint recorded right after it (`apply_rewind` writes one)."""
    position = entries.index(rewind)
    for entry in entries[position + 1 :]:
        if entry.entry_type == "checkpoint":
            state = entry.data.get("state", entry.data)
            return state if isinstance(state, dict) else None
        if entry.entry_type == "rewind":
            break
    return None


def _ids(process: Any, entry: Any) -> tuple[str, str]:
    if not isinstance(process, str) or not process or not isinstance(entry, str) or not entry:
        raise HTTPException(400, "a process rewind needs `process` (its id) and `entry` (the entry to rewind to)")
    return process, entry


routes = [
    Route("/process-rewind", rewind_panel, name="process_rewind"),
    Route("/process-rewind", apply, methods=["POST"], name="process_rewind_apply"),
]
