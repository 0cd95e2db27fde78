"""What the runs page says about an upload: a line per file, what it added or why it could not be loaded."""

from __future__ import annotations

from dataclasses import dataclass

from devtool.store import LoadResult
from devtool.store.load import counted
from devtool.web.links import process_url, run_url


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
    good_lines_load: bool = False  # refused for its bad lines: loading its good lines would work


@dataclass(frozen=True)
class UploadResult:
    files: tuple[FileOutcome, ...] = ()
    error: str | None = None  # the request itself was refused

    @property
    def failed(self) -> bool:
        return self.error is not None or any(f.outcome == "failed" for f in self.files)


def loaded(name: str, result: LoadResult) -> FileOutcome:
    """What the upload of file `name` says about what loading it added (or that it was loaded before)."""
    links = tuple(Link(f"run {trace_id[:12]}", run_url(trace_id)) for trace_id in result.traces[:10]) + tuple(
        Link(f"process {process_id}", process_url(process_id)) for process_id in result.processes[:10]
    )
    if result.already_loaded:
        message = f"already loaded ({result.held()}), nothing added{_tail(result)}"
        return FileOutcome(name, "already", message, links, _skipped(result))
    if not result.journal:
        what = (
            f"{counted(result.events, 'event')}, {counted(result.spans, 'span')}, {counted(len(result.traces), 'run')}"
        )
    else:
        what = counted(result.journal_entries, "journal entry", "journal entries")
    return FileOutcome(name, "loaded", f"loaded {what}{_tail(result)}", links, _skipped(result))


def _skipped(result: LoadResult) -> tuple[str, ...]:
    skipped = tuple(f"{problem.where()}: skipped: {problem.message}" for problem in result.problems)
    if result.bad_lines > len(result.problems):
        skipped += (f"and {result.bad_lines - len(result.problems)} more bad lines skipped",)
    return skipped


def _tail(result: LoadResult) -> str:
    return f", {counted(result.bad_lines, 'bad line')} skipped" if result.bad_lines else ""
