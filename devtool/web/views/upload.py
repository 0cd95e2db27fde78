"""`POST /upload`: load trace and journal files chosen or dropped on the runs page.

Each file is loaded on its own, all or nothing, exactly as `devtool load` loads it (`load_file`), and
each gets one line saying what it added or, when it could not be loaded, what is wrong and where
(`name: line 7: no "type"`): the store's own messages, with the upload's name for its path. Nothing
a client sends ends in a 500:

- no `Content-Length` → 411; a body over `Settings.max_upload_bytes` → 413, before it is read;
- not `multipart/form-data`, a broken multipart body, no file in it, too many files → 400;
- a file that cannot be loaded → 422 (the other files of the upload still load, as with the CLI).

An htmx request gets the result fragment (with the runs table swapped out of band, filtered as the
page it came from); a plain form post gets the whole runs page with the result on it.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException
from starlette.formparsers import MultiPartException
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from devtool.store import BadLines, BadLinesError, LoadError, LoadResult, Store, StoreError, load_file
from devtool.web.links import process_url, run_url
from devtool.web.templating import render, wants_fragment
from devtool.web.views.runs import RunsFilter, filter_of_page, format_bytes, page_context, runs_list

MAX_FILES = 20
MAX_NAME_BYTES = 200  # well under any file system's 255
# Room for the multipart framing around the files (boundaries, part headers, the other fields).
FRAMING_BYTES = 64 << 10
_UNSAFE_NAME = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class Link:
    label: str
    href: str


@dataclass(frozen=True)
class FileOutcome:
    """What happened to one uploaded file: `loaded`, `already` (its content was stored) or `failed`."""

    name: str
    outcome: str
    message: str
    links: tuple[Link, ...] = ()
    skipped: tuple[str, ...] = ()  # the bad lines left out, when asked to skip them


@dataclass(frozen=True)
class UploadResult:
    files: tuple[FileOutcome, ...] = ()
    error: str | None = None  # the request itself was refused

    @property
    def failed(self) -> bool:
        return self.error is not None or any(f.outcome == "failed" for f in self.files)


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
    limit: int = request.app.state.settings.max_upload_bytes
    refusal = _refuse_early(request, limit)
    if refusal is not None:
        return await _respond(request, UploadResult(error=refusal[1]), refusal[0])
    with tempfile.TemporaryDirectory(prefix="devtool-upload-") as folder:
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
                saved = await run_in_threadpool(_save, files, Path(folder))
        except (MultiPartException, HTTPException) as exc:
            detail = exc.message if isinstance(exc, MultiPartException) else exc.detail
            error = f"the upload is not a form post with files: {detail}"
            return await _respond(request, UploadResult(error=error), 400)
        outcomes = await run_in_threadpool(_load_all, request.app.state.store, saved, skip)
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
        hint = " (tick “load the good lines” to load the rest)" if isinstance(exc, BadLinesError) else ""
        return FileOutcome(item.name, "failed", f"{exc.reason}{hint}")
    except StoreError as exc:
        return FileOutcome(item.name, "failed", str(exc))
    return _outcome(item.name, result)


def _outcome(name: str, result: LoadResult) -> FileOutcome:
    links = tuple(Link(f"run {trace_id[:12]}", run_url(trace_id)) for trace_id in result.traces[:10]) + tuple(
        Link(f"process {process_id}", process_url(process_id)) for process_id in result.processes[:10]
    )
    if result.already_loaded:
        what = (
            _count(result.events, "event")
            if result.events
            else _count(result.journal_entries, "journal entry", "journal entries")
        )
        return FileOutcome(name, "already", f"already loaded ({what}), nothing added", links)
    if result.kind.startswith("trace"):
        what = f"{_count(result.events, 'event')}, {_count(result.spans, 'span')}, {_count(len(result.traces), 'run')}"
    else:
        what = f"{_count(result.journal_entries, 'journal entry', 'journal entries')}"
    skipped = tuple(f"{problem.where()}: skipped: {problem.message}" for problem in result.problems)
    if result.bad_lines > len(result.problems):
        skipped += (f"and {result.bad_lines - len(result.problems)} more bad lines skipped",)
    tail = f", {_count(result.bad_lines, 'bad line')} skipped" if result.bad_lines else ""
    return FileOutcome(name, "loaded", f"loaded {what}{tail}", links, skipped)


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


async def _respond(request: Request, result: UploadResult, status: int) -> HTMLResponse:
    fragment = wants_fragment(request)
    chosen = filter_of_page(request) if fragment else RunsFilter()
    listing = await run_in_threadpool(runs_list, request.app.state.store, chosen)
    context = page_context(request, listing, upload=result)
    return render(request, "_upload_result.html" if fragment else "runs.html", context, status_code=status)


routes = [Route("/upload", upload, methods=["POST"], name="upload")]
