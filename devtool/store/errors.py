"""The store's errors: one base class, and a subclass per thing a caller may want to tell apart.

Every message says what went wrong and where (the file, the line or element, the run or span), in
words a user can act on; callers print `str(error)` as it is.
"""

from __future__ import annotations

import errno
import re
from dataclasses import dataclass
from pathlib import Path


class StoreError(Exception):
    """Base class of the store's errors; the message says what and where."""


class StoreLockedError(StoreError):
    """The database file is open in another process (DuckDB allows one writing process)."""


@dataclass(frozen=True, slots=True)
class LineProblem:
    """One bad line of a file, or element of a JSON array or of an appended batch, and what is wrong."""

    message: str
    line: int | None = None  # 1-based line of a line-based file
    element: int | None = None  # 0-based index in a JSON array or an appended batch
    column: int | None = None  # 1-based, in characters: where a line stops being JSON

    def where(self) -> str:
        if self.line is None:
            return f"element {self.element}"
        return f"line {self.line}" if self.column is None else f"line {self.line}, column {self.column}"


class LoadError(StoreError):
    """A file that could not be loaded. Nothing of it was stored."""

    def __init__(self, path: Path | str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = Path(path)
        self.reason = message


class BadLinesError(LoadError):
    """A file with bad lines under the reject policy, or with no good line at all: `problems` names
    each bad one (up to a limit), `good` counts its good lines (0: loading "its good lines" loads nothing)."""

    SHOWN = 3

    def __init__(self, path: Path | str, problems: tuple[LineProblem, ...], total: int, good: int = 0) -> None:
        shown = "; ".join(f"{p.where()}: {p.message}" for p in problems[: self.SHOWN])
        more = f"; and {total - self.SHOWN} more" if total > self.SHOWN else ""
        noun = "bad line" if total == 1 else "bad lines"
        super().__init__(path, f"{total} {noun}, nothing stored: {shown}{more}")
        self.problems = problems
        self.total = total
        self.good = good


class SourceChangedError(LoadError):
    """The file changed while it was being read, so what was read may not be what is on disk."""


class InvalidEventsError(StoreError):
    """Events handed to `check_events` (`append_events`) that are not TraceEvents; `problems` are by index."""

    def __init__(self, problems: tuple[LineProblem, ...], total: int) -> None:
        shown = "; ".join(f"event {p.element}: {p.message}" for p in problems[:3])
        more = f"; and {total - 3} more" if total > 3 else ""
        super().__init__(f"{total} invalid event{'s' if total != 1 else ''}, none stored: {shown}{more}")
        self.problems = problems
        self.total = total

    def __reduce__(self) -> tuple[type[InvalidEventsError], tuple[tuple[LineProblem, ...], int]]:
        # An exception pickles its `args` (here the message) only, which this `__init__` does not take:
        # raised in a process (an OTLP reader worker), it could not be unpickled in the server.
        return InvalidEventsError, (self.problems, self.total)


class NotABatchError(StoreError):
    """A posted batch refused as a whole: the body is not a JSON array."""


class BatchTooLargeError(StoreError):
    """A posted batch of more events than the door takes at once."""


class NotFoundError(StoreError):
    """A run, span, process, entry or snapshot that is not in the store."""


_WRITTEN = re.compile(r'Could not write file "([^"]+)"')


def disk_full(path: Path, exc: BaseException) -> StoreError | None:
    """A one-line `StoreError` when `exc` (opening or writing the store at `path`) is a full disk,
    naming the file DuckDB could not write (else None)."""
    text = str(exc)
    if not (isinstance(exc, OSError) and exc.errno == errno.ENOSPC) and "no space left on device" not in text.lower():
        return None
    written = _WRITTEN.search(text)
    where = written.group(1) if written else getattr(exc, "filename", None) or str(path)
    return StoreError(
        f"no space left on device: {where} (free some space on that disk and start again; what the store holds is kept)"
    )


def first_line(exc: BaseException) -> str:
    """The first line of what `exc` says (DuckDB's errors go on for lines), or its type's name."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
