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
    asked = _asked(await request.body())
    if isinstance(asked, str):
        shape = f'{{"files": [up to {MAX_FILES} absolute paths], "bad_lines": "reject" or "skip"}}'
        return JSONResponse({"error": f"{asked}: send {shape}"}, status_code=400)
    files, bad_lines = asked
    results = await run_in_threadpool(_load_all, state(request).store, files, bad_lines)
    return JSONResponse({"results": results})


def _asked(body: bytes) -> tuple[list[Path], BadLines] | str:
    """The files and bad-lines policy a load asks for, or what is wrong with the request."""
    if len(body) > MAX_BODY:
        return f"the body is over {MAX_BODY >> 20} MiB"
    try:
        asked = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        return f"the body is not JSON ({exc})"
    if not isinstance(asked, dict):
        return "the body is not a JSON object"
    files, bad_lines = asked.get("files"), asked.get("bad_lines", "reject")
    if not isinstance(files, list) or not 0 < len(files) <= MAX_FILES:
        return f"files: not a list of 1 to {MAX_FILES} paths"
    for index, name in enumerate(files):
        # The server does not stand where the command does: `devtool load` sends absolute paths.
        if not isinstance(name, str) or not Path(name).is_absolute():
            return f"files[{index}]: {orjson.dumps(name).decode()} is not an absolute path"
    if bad_lines not in ("reject", "skip"):
        return f"bad_lines: {orjson.dumps(bad_lines).decode()} is neither reject nor skip"
    return [Path(name) for name in files], BadLines(bad_lines)


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
