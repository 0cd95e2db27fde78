"""The runs list, `/`: every run and process journal in the store; uploads into it; its live stream.

`?q=`, `?status=` and `?page=` filter it (`pages/runs_filter.py`). The search box and the status
buttons fetch just the results fragment with htmx and push the URL, so a reload or a copied link
shows the same list. A filter that cannot be (an unknown status, a page that is not a number) gets a
400 page that says what was wrong and still lists the runs, unfiltered by it. `/live/runs` is the
list's live stream (`devtool.web.live.streams`): it redraws as runs change.

`POST /upload` loads trace and journal files chosen or dropped on the page. Each file is loaded on its
own, all or nothing, exactly as `devtool load` loads it (`load_file`), and each gets one line saying
what it added or, when it could not be loaded, what is wrong and where (`name: line 7: no "type"`):
the store's own messages, with the upload's name for its path (`pages/upload_outcome.py`). Nothing a
client sends ends in a 500:

- no `Content-Length` → 411; a body over `Settings.max_upload_bytes` → 413, before it is read;
- not `multipart/form-data`, a broken multipart body, no file in it, too many files → 400;
- a file that cannot be loaded → 422 (the other files of the upload still load, as with the CLI).

An htmx upload gets the result fragment (with the runs table swapped out of band, filtered as the
page it came from); a plain form post gets the whole runs page with the result on it.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from urllib.parse import parse_qsl, urlsplit

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException
from starlette.formparsers import MultiPartException
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from devtool.store import BadLines, BadLinesError, LoadError, Store, StoreError, load_file
from devtool.store.queries import last_event_id
from devtool.store.queries.runs import STATUSES
from devtool.web.live.streams import RUNS_INTERVAL, RunsFeed, sse_response
from devtool.web.pages.live_hint import live_hint
from devtool.web.pages.run_hits import first_hits
from devtool.web.pages.runs_filter import BadFilter, RunsFilter, RunsList, runs_list
from devtool.web.pages.upload_outcome import FileOutcome, UploadResult, loaded
from devtool.web.state import state
from devtool.web.templating import render, wants_fragment

MAX_FILES = 20
MAX_NAME_BYTES = 200  # well under any file system's 255
# Room for the multipart framing around the files (boundaries, part headers, the other fields).
FRAMING_BYTES = 64 << 10
_UNSAFE_NAME = re.compile(r"[\x00-\x1f\x7f]")


def runs_page(request: Request) -> HTMLResponse:
    error = None
    try:
        chosen = RunsFilter.from_query(request.query_params)
    except BadFilter as exc:
        error = str(exc)
        chosen = RunsFilter.lenient(request.query_params)
    # Read first: the page's live stream starts after it, so no run stored while it renders is missed.
    live_after = last_event_id(state(request).store)
    listing = runs_list(state(request).store, chosen)
    found = first_hits(state(request).store, listing.runs, chosen.q)
    context = _page_context(request, listing, filter_error=error, live_after=live_after, found=found)
    return render(request, "runs.html", context, fragment="_runs_table.html", status_code=400 if error else 200)


async def runs_live(request: Request) -> Response:
    app = state(request)
    return sse_response(request, RunsFeed(app.store, max(app.settings.live_interval, RUNS_INTERVAL)))


@dataclass
class _Saved:
    name: str
    path: Path
    outcomes: list[FileOutcome] = field(default_factory=list)


def safe_name(filename: str | None) -> str:
    """The name a browser gave a file, as a plain file name: no folders, no control characters."""
    name = _UNSAFE_NAME.sub("", PurePosixPath((filename or "").replace("\\", "/")).name).strip()
    if name in ("", ".", ".."):
        return "upload"
    if len(name.encode()) > MAX_NAME_BYTES:
        suffix = PurePosixPath(name).suffix
        suffix = suffix if len(suffix.encode()) <= 16 else ""
        name = name.encode()[: MAX_NAME_BYTES - 20].decode(errors="ignore") + "…" + suffix
    return name


async def upload(request: Request) -> HTMLResponse:
    limit = state(request).settings.max_upload_bytes
    refusal = _refuse_early(request, limit)
    if refusal is not None:
        return await _respond(request, UploadResult(error=refusal[1]), refusal[0])
    # Made and removed (with files up to the upload limit in it) in the thread pool: disk work, off the loop.
    folder = Path(await run_in_threadpool(tempfile.mkdtemp, prefix="devtool-upload-"))
    try:
        return await _upload_into(request, folder, limit)
    finally:
        await run_in_threadpool(shutil.rmtree, folder, True)


async def _upload_into(request: Request, folder: Path, limit: int) -> HTMLResponse:
    try:
        async with request.form(max_files=MAX_FILES, max_fields=10) as form:
            files = [value for value in form.getlist("file") if isinstance(value, UploadFile)]
            if not files or all(not f.filename and not f.size for f in files):
                return await _respond(request, UploadResult(error="no file in the upload: choose or drop one"), 400)
            total = sum(f.size or 0 for f in files)
            if total > limit:
                message = f"the upload is {format_bytes(total)}, over the limit of {format_bytes(limit)}"
                return await _respond(request, UploadResult(error=message), 413)
            skip = form.get("bad_lines") == BadLines.SKIP.value
            saved = await run_in_threadpool(_save, files, folder)
    except (MultiPartException, HTTPException) as exc:
        detail = exc.message if isinstance(exc, MultiPartException) else exc.detail
        error = f"the upload is not a form post with files: {detail}"
        return await _respond(request, UploadResult(error=error), 400)
    outcomes = await run_in_threadpool(_load_all, state(request).store, saved, skip)
    result = UploadResult(files=tuple(outcomes))
    return await _respond(request, result, 422 if result.failed else 200)


def _refuse_early(request: Request, limit: int) -> tuple[int, str] | None:
    """A status and a reason to refuse the request before reading its body, or None."""
    length = request.headers.get("content-length")
    if length is None:
        return 411, "the upload did not say its size (no Content-Length header)"
    if not length.isdigit():
        return 400, f"Content-Length {length[:40]!r} is not a size"
    if int(length) > limit + FRAMING_BYTES:
        return 413, f"the upload is {format_bytes(int(length))}, over the limit of {format_bytes(limit)}"
    content_type = request.headers.get("content-type", "")
    if content_type.split(";")[0].strip().lower() != "multipart/form-data":
        shown = content_type.split(";")[0][:60] or "no content type"
        return 400, f"send files as multipart/form-data (a form with a `file` field), not {shown}"
    return None


def _save(files: list[UploadFile], folder: Path) -> list[_Saved]:
    """Each upload under its own name in `folder` (a subfolder per file: two may share a name)."""
    saved = []
    for index, upload_file in enumerate(files):
        name = safe_name(upload_file.filename)
        target = folder / str(index) / name
        target.parent.mkdir()
        upload_file.file.seek(0)
        with target.open("wb") as out:
            shutil.copyfileobj(upload_file.file, out, 1 << 20)
        saved.append(_Saved(name, target))
    return saved


def _load_all(store: Store, saved: list[_Saved], skip: bool) -> list[FileOutcome]:
    return [_load_one(store, item, skip) for item in saved]


def _load_one(store: Store, item: _Saved, skip: bool) -> FileOutcome:
    try:
        result = load_file(store, item.path, bad_lines=BadLines.SKIP if skip else BadLines.REJECT)
    except LoadError as exc:
        return FileOutcome(
            item.name, "failed", exc.reason, good_lines_load=isinstance(exc, BadLinesError) and exc.good > 0
        )
    except StoreError as exc:
        return FileOutcome(item.name, "failed", str(exc))
    return loaded(item.name, result)


async def _respond(request: Request, result: UploadResult, status: int) -> HTMLResponse:
    fragment = wants_fragment(request)
    chosen = _filter_of_page(request) if fragment else RunsFilter()
    listing = await run_in_threadpool(runs_list, state(request).store, chosen)
    context = _page_context(request, listing, upload=result)
    return render(request, "_upload_result.html" if fragment else "runs.html", context, status_code=status)


def format_bytes(n: int) -> str:
    """`512 MiB`, `64 KiB`, `900 bytes`."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            value = n / size
            return f"{value:.0f} {unit}" if value >= 10 or value.is_integer() else f"{value:.1f} {unit}"
    return f"{n} bytes"


def _page_context(request: Request, listing: RunsList, **extra: object) -> dict[str, object]:
    """What runs.html and its fragments render from."""
    limit = state(request).settings.max_upload_bytes
    return {
        "listing": listing,
        "statuses": STATUSES,
        "max_upload": format_bytes(limit),
        "max_upload_bytes": limit,
        "filter_error": None,
        "upload": None,
        "live_hint": live_hint(str(request.base_url).rstrip("/")),
        "lake": state(request).store.lake is not None,
        **extra,
    }


def _filter_of_page(request: Request) -> RunsFilter:
    """The filter of the page a request came from (htmx says which in `HX-Current-URL`)."""
    current = request.headers.get("HX-Current-URL", "")
    return RunsFilter.lenient(dict(parse_qsl(urlsplit(current).query, keep_blank_values=True)))


routes = [
    Route("/", runs_page, name="runs"),
    Route("/upload", upload, methods=["POST"], name="upload"),
    Route("/live/runs", runs_live, name="runs_live"),
]
