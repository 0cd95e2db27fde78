"""Changing the past from a run's page: `POST /runs/<trace_id>/fork` saves the run as a fork with one
call's output (or a turn's input messages) edited, and goes to the fork's page, which offers Replay.

The form (`_fork_editor.html`, in a span's detail): `call_id` (the call path), and `output` (read as
text when `format` is `text`: a turn's answer text; else as JSON) or `messages` (JSON). A bad edit is
answered 422 naming the call and what is wrong; a run that cannot be rewound whole, 422 saying why.
"""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from devtool.actions.call_fork import fork_call
from devtool.actions.fork import ForkError, parse_json
from devtool.actions.run_rewind import RewindError
from devtool.store import NotFoundError, StoreError
from devtool.web.auth import user_of
from devtool.web.forms import form_of
from devtool.web.state import state


async def run_fork(request: Request) -> Response:
    """`POST /runs/<trace_id>/fork`: the run forked with one call edited → 303 to the fork."""
    form = await form_of(request)
    return await run_in_threadpool(_fork, request, form)


def _fork(request: Request, form: FormData) -> Response:
    trace_id = request.path_params["trace_id"]
    call_id = str(form.get("call_id", ""))
    if not call_id:
        raise HTTPException(400, "fork needs call_id: the call path of the call to edit")
    edit: dict[str, Any] = {}
    try:
        if "messages" in form:
            edit["messages"] = parse_json(str(form["messages"]), f"messages of {call_id}")
        elif "output" in form:
            text = str(form["output"])
            edit["output"] = text if form.get("format") == "text" else parse_json(text, f"output of {call_id}")
        else:
            raise ForkError(f"nothing to fork: give the new output or messages of {call_id}")
        fork_id = fork_call(state(request).store, trace_id, call_id, created_by=user_of(request), **edit)
    except NotFoundError as exc:
        raise HTTPException(404, str(exc)) from None
    except (ForkError, RewindError, StoreError) as exc:
        raise HTTPException(422, f"cannot fork {call_id}: {exc}") from None
    return RedirectResponse(request.url_for("snapshot", snapshot_id=fork_id).path, 303)


routes = [
    Route("/runs/{trace_id:id}/fork", run_fork, methods=["POST"], name="run_fork"),
]
