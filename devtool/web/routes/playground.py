"""The playground of a recorded turn, `/runs/<trace_id>/spans/<span_id>/playground`.

- `GET`: the page: the turn's messages, tools, model and parameters in editors, its recorded answer.
- `POST` with a JSON body `{"messages", "model", "params", "tools"}` and `Accept: application/json`:
  the model asked once; answered `{"message", "text", "usage", "costs", "finishReason"}`, or `{"error"}`
  with 400 (a malformed request) or 422 (what the provider said: a missing key, an unknown model).
- `POST` of the page's form (htmx): the request checked, then the runs (1 to 5) that stream into the
  page: `GET .../playground/stream/<job>` (Server-Sent Events: `run-<n>` with the answer so far, then
  the whole answer with its word diff against the recorded one, tokens and cost; `done`).
- `POST .../playground/save`: the run forked with this turn answering `answer` (its callId's output,
  `devtool.actions.call_fork`) → 303 (or `HX-Redirect`) to the fork, whose page offers Replay.

Every POST takes the page token (the middleware checks it). Nothing is journaled or traced: the model
is asked outside any run.
"""

from __future__ import annotations

import asyncio
import functools
import secrets
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import orjson
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from devtool.actions.call_fork import fork_call
from devtool.actions.fork import ForkError
from devtool.actions.playground import PlaygroundError, PlayRequest, PlayResult, parse_request, play
from devtool.actions.run_rewind import RewindError
from devtool.store import NotFoundError, StoreError
from devtool.store.queries import get_run
from devtool.web.auth import user_of
from devtool.web.forms import form_of
from devtool.web.pages.playground import RecordedTurn, recorded_turn, word_diff
from devtool.web.state import state
from devtool.web.templating import render

MAX_BODY = 1 << 20
JOB_TTL = 120.0  # seconds a started job waits for its stream
MAX_JOBS = 64


@dataclass(frozen=True)
class _Job:
    request: PlayRequest
    made: float


_jobs: dict[str, _Job] = {}


def _turn(request: Request) -> RecordedTurn:
    params = request.path_params
    try:
        return recorded_turn(state(request).store, params["trace_id"], params["span_id"])
    except NotFoundError as exc:
        raise HTTPException(404, str(exc)) from None


def playground_page(request: Request) -> HTMLResponse:
    turn = _turn(request)
    run = get_run(state(request).store, turn.trace_id)
    return render(request, "playground.html", {"turn": turn, "run": run})


async def playground_run(request: Request) -> Response:
    """A run of the playground: JSON in and out, or the page's form in and its streaming runs out."""
    turn = await run_in_threadpool(_turn, request)
    if "application/json" in request.headers.get("content-type", ""):
        return await _json_run(request)
    form = await form_of(request, max_fields=10)
    try:
        data = {
            key: _loaded(str(form.get(key) or ""), key, default)
            for key, default in (("messages", None), ("params", {}), ("tools", []))
        }
        runs = str(form.get("runs") or "1")
        play_request = parse_request(
            {**data, "model": str(form.get("model") or ""), "runs": int(runs) if runs.isdigit() else runs}
        )
    except PlaygroundError as exc:
        return render(request, "_playground_error.html", {"error": str(exc)})
    job = secrets.token_urlsafe(16)
    _keep(job, _Job(play_request, time.monotonic()))
    return render(
        request,
        "_playground_runs.html",
        {"turn": turn, "job": job, "runs": play_request.runs, "model": play_request.model},
    )


async def _json_run(request: Request) -> Response:
    body = await request.body()
    if len(body) > MAX_BODY:
        return JSONResponse({"error": f"the request is over {MAX_BODY} bytes"}, 413)
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        return JSONResponse({"error": f"the body is not JSON: {exc}"}, 400)
    try:
        play_request = parse_request(data)
        results = [await play(play_request) for _ in range(play_request.runs)]
    except PlaygroundError as exc:
        return JSONResponse({"error": str(exc)}, exc.status)
    if len(results) == 1:
        return JSONResponse({**results[0].as_json(), "model": play_request.model})
    return JSONResponse({"answers": [r.as_json() for r in results], "model": play_request.model})


async def playground_stream(request: Request) -> Response:
    """The job's runs, one after the other, streamed as they answer."""
    job = _jobs.pop(request.path_params["job"], None)
    if job is None or time.monotonic() - job.made > JOB_TTL:
        raise HTTPException(404, "no such playground run (each runs once, within two minutes of Run)")
    turn = await run_in_threadpool(_turn, request)
    env = state(request).templates

    def fragment(name: str, **context: Any) -> str:
        return env.get_template(name).render(request=request, turn=turn, **context)

    async def events() -> AsyncIterator[ServerSentEvent]:
        results: list[PlayResult] = []
        for number in range(job.request.runs):
            pieces: asyncio.Queue[str | None] = asyncio.Queue()
            task = asyncio.ensure_future(play(job.request, pieces.put_nowait))
            task.add_done_callback(functools.partial(_ended, pieces))
            text = ""
            while (piece := await pieces.get()) is not None:
                text += piece
                yield ServerSentEvent(fragment("_playground_partial.html", text=text), event=f"run-{number}")
            try:
                result = task.result()
            except PlaygroundError as exc:
                yield ServerSentEvent(fragment("_playground_error.html", error=str(exc)), event=f"run-{number}")
                continue
            results.append(result)
            diff = word_diff(turn.answer_text, result.text)
            yield ServerSentEvent(
                fragment("_playground_answer.html", result=result, diff=diff, number=number), event=f"run-{number}"
            )
        yield ServerSentEvent(
            fragment("_playground_spread.html", results=results, asked=job.request.runs), event="done"
        )

    return EventSourceResponse(events(), ping=15)


async def playground_save(request: Request) -> Response:
    """The run forked with this turn answering the form's `answer` (text)."""
    form = await form_of(request, max_fields=5)
    turn = await run_in_threadpool(_turn, request)
    if turn.call_id is None or "/turn:" not in turn.call_id:
        raise HTTPException(422, "this turn has no call path (a trace written without one): it cannot be forked")

    def save() -> str:
        return fork_call(
            state(request).store,
            turn.trace_id,
            turn.call_id or "",
            output=str(form.get("answer") or ""),
            created_by=user_of(request),
        )

    try:
        fork_id = await run_in_threadpool(save)
    except (ForkError, RewindError, StoreError) as exc:
        raise HTTPException(422, f"cannot save the variant: {exc}") from None
    location = request.url_for("snapshot", snapshot_id=fork_id).path
    if request.headers.get("HX-Request") == "true":
        return Response(status_code=204, headers={"HX-Redirect": location})
    return RedirectResponse(location, 303)


def _ended(pieces: asyncio.Queue[str | None], _: object) -> None:
    pieces.put_nowait(None)  # the run's answer (or error) is in: no more pieces


def _loaded(text: str, field: str, default: Any) -> Any:
    if not text.strip():
        return default
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise PlaygroundError(f"{field}: not JSON ({exc})") from None


def _keep(job: str, entry: _Job) -> None:
    now = time.monotonic()
    for stale in [key for key, old in _jobs.items() if now - old.made > JOB_TTL]:
        _jobs.pop(stale, None)
    while len(_jobs) >= MAX_JOBS:
        _jobs.pop(next(iter(_jobs)))
    _jobs[job] = entry


PLAYGROUND = "/runs/{trace_id:id}/spans/{span_id}/playground"
routes = [
    Route(PLAYGROUND, playground_page, name="playground"),
    Route(PLAYGROUND, playground_run, methods=["POST"], name="playground_run"),
    Route(PLAYGROUND + "/stream/{job}", playground_stream, name="playground_stream"),
    Route(PLAYGROUND + "/save", playground_save, methods=["POST"], name="playground_save"),
]
