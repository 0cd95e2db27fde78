"""The few filesystem operations the journal's guarantees rest on, each done the careful way.

An exclusive `flock` across processes; `fdatasync` (the appended bytes and the new size are all a
reader after a crash needs); whole writes (a short `write` is continued, never left half done); an
atomic replace (a temporary file, fsync'd, renamed, then the directory fsync'd so the rename itself
survives a power cut); and whether a descriptor still names the file at a path.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import uuid
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def exclusive_lock(fd: int) -> Iterator[None]:
    """Hold the file's exclusive lock: other processes (and other descriptors here) wait."""
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


def write_all(fd: int, data: bytes | memoryview) -> None:
    """Write every byte (a `write` may take only part of them)."""
    view = memoryview(data)
    written = 0
    while written < len(view):
        written += os.write(fd, view[written:])


def datasync(fd: int) -> None:
    """Make what was written durable."""
    if hasattr(os, "fdatasync"):
        os.fdatasync(fd)
    else:  # pragma: no cover - macOS has no fdatasync
        os.fsync(fd)


def fsync_directory(directory: Path) -> None:
    """Make the directory's entries (a new or renamed file) durable."""
    fd = os.open(directory, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def replace_atomically(path: Path, data: bytes) -> None:
    """Replace `path` with `data`: a reader, or a crash, sees the old file or the new one, never a mix."""
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}.tmp")
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        try:
            write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, path)
        fsync_directory(path.parent)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise


def same_file(fd: int, path: Path) -> bool:
    """Whether `path` still names the file `fd` has open (not deleted, not replaced)."""
    try:
        named = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)
