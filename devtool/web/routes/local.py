"""`/api/v1/server` and `POST /api/v1/load`: the command line on the server's machine, working through
the server that owns the database (DuckDB lets one process write a file; `devtool serve` is it).

Both answer only requests that carry the local token (`Authorization: Bearer <token>`), which
`devtool serve` writes beside the database for its user alone (`devtool.cli.server_file`): the team
token of a shared server does not open them, so a teammate cannot make the server read files of its
machine.

- `GET /api/v1/server` → `{"db": <the database's absolute path>, "version": ...}`: which database this
  server owns, so `devtool load --db X` only ever loads into X.
- `POST /api/v1/load`, JSON `{"files": [absolute paths], "bad_lines": "reject" | "skip"}` → 200 with
  a result per file, in order: `{"path", "loaded": LoadResult as JSON}` or `{"path", "error",
  "bad_lines"}` (a file that could not be loaded, all or nothing, as `devtool load` says it). Each
  file goes through `load_file`, the same door as `devtool load` and the upload form.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import orjson
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from devtool import __version__
from devtool.store import BadLines, BadLinesError, LoadResult, Store, StoreError, load_file
from devtool.web.state import state

MAX_FILES = 1000
MAX_BODY = 1 << 20


def server_info(request: Request) -> Response:
    refused = _refused(request)
    if refused is not None:
        return refused
    return JSONResponse({"db": str(state(request).store.path.resolve()), "version": __version__})


async def load_paths(request: Request) -> Response:
    refused = _refused(request)
    if refused is not None:
        return refused
    body = await request.body()
    try:
        asked = orjson.loads(body) if len(body) <= MAX_BODY else None
    except orjson.JSONDecodeError:
        asked = None
    files = asked.get("files") if isinstance(asked, dict) else None
    bad_lines = asked.get("bad_lines", "reject") if isinstance(asked, dict) else None
    if (
        not isinstance(files, list)
        or not 0 < len(files) <= MAX_FILES
        or not all(isinstance(f, str) and Path(f).is_absolute() for f in files)
        or bad_lines not in ("reject", "skip")
    ):
        return JSONResponse(
            {"error": f'send {{"files": [up to {MAX_FILES} absolute paths], "bad_lines": "reject" or "skip"}}'},
            status_code=400,
        )
    results = await run_in_threadpool(_load_all, state(request).store, [Path(f) for f in files], BadLines(bad_lines))
    return JSONResponse({"results": results})


def _load_all(store: Store, paths: list[Path], bad_lines: BadLines) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    for path in paths:
        try:
            results.append({"path": str(path), "loaded": result_json(load_file(store, path, bad_lines=bad_lines))})
        except StoreError as exc:
            results.append({"path": str(path), "error": str(exc), "bad_lines": isinstance(exc, BadLinesError)})
    return results


def result_json(result: LoadResult) -> dict[str, Any]:
    """A `LoadResult` as JSON (`devtool.cli.load` reads it back)."""
    found = dataclasses.asdict(result)
    found["path"] = str(result.path)
    return found


def _refused(request: Request) -> Response | None:
    if state(request).access.local_bearer(request):
        return None
    return JSONResponse(
        {"error": "only the command line on this server's machine may ask this (it sends the server's local token)"},
        status_code=403,
    )


routes = [
    Route("/api/v1/server", server_info, name="local_server"),
    Route("/api/v1/load", load_paths, methods=["POST"], name="local_load"),
]
