"""A file being loaded: held open from the first byte read to the commit.

The file is opened once. One streaming pass computes its SHA-256 (the progress bar's "bytes read")
and bounds its longest line; it runs in a thread of its own (`start_digest`) while DuckDB reads the
same file, or before anything else (`digest`) when the file looks loaded already. DuckDB reads the
open file through `/proc/self/fd/N` where the platform has it: a file deleted or renamed mid-load is
still read whole, as it was. A file written to in place while it loads is caught by comparing its
size and modification time at the start and at the end.
"""

from __future__ import annotations

import hashlib
import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import BinaryIO

from devtool.store.errors import LoadError, SourceChangedError

CHUNK = 1 << 20
HEAD = 64 << 10

Progress = Callable[[int, int], None]


class SourceFile:
    """An open file, its size, its first bytes, and (after `digest()`) its content hash."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self._file = path.open("rb")
        except FileNotFoundError:
            raise LoadError(path, "no such file") from None
        except IsADirectoryError:
            raise LoadError(path, "is a directory, not a file") from None
        except OSError as exc:
            raise LoadError(path, f"cannot read it: {exc.strerror or exc}") from None
        info = os.fstat(self._file.fileno())
        if not stat.S_ISREG(info.st_mode):
            self._file.close()
            raise LoadError(path, "is not a regular file")
        self._stamp = (info.st_size, info.st_mtime_ns)
        self.size = info.st_size
        self.modified_ns = info.st_mtime_ns
        self.head = self._file.read(HEAD)
        self.content_hash = ""
        self.longest_line = 0
        self._digesting: threading.Thread | None = None
        self._digest_error: BaseException | None = None

    def __enter__(self) -> SourceFile:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        if self._digesting is not None:
            self._digesting.join()
        self._file.close()

    @property
    def reader_path(self) -> str:
        """The path DuckDB should read: this open file itself when the platform can name it."""
        for folder in ("/proc/self/fd", "/dev/fd"):
            candidate = f"{folder}/{self._file.fileno()}"
            if os.path.exists(candidate):
                return candidate
        return str(self.path)

    def stream(self) -> BinaryIO:
        """The open file, from its first byte (after the digest, which reads it too)."""
        self.wait_digest()
        self._file.seek(0)
        return self._file

    def read_all(self) -> bytes:
        return self.stream().read()

    def start_digest(self, progress: Progress | None = None) -> None:
        """`digest` in a thread of its own, alongside DuckDB's read; `wait_digest` for the result.

        The file is read twice either way (by us and by DuckDB), but on two cores at once.
        """

        def run() -> None:
            try:
                self.digest(progress)
            except BaseException as exc:
                self._digest_error = exc

        self._digesting = threading.Thread(target=run, name="devtool-digest", daemon=True)
        self._digesting.start()

    def wait_digest(self) -> str:
        """The content hash, once the digest (started with `start_digest`, or not) is done."""
        if self._digesting is not None:
            self._digesting.join()
            self._digesting = None
        if self._digest_error is not None:
            raise self._digest_error
        if not self.content_hash:
            self.digest()
        return self.content_hash

    def digest(self, progress: Progress | None = None) -> str:
        """Read the whole file once: its SHA-256, and its longest line if that is over a chunk (1 MiB)."""
        sha = hashlib.sha256()
        done = 0
        longest = 0
        run = 0  # bytes since the last newline, across chunks
        self._file.seek(0)
        while chunk := self._file.read(CHUNK):
            sha.update(chunk)
            first = chunk.find(b"\n")
            if first < 0:
                run += len(chunk)
            else:
                # A line inside one chunk is shorter than a chunk; only lines across chunks need counting.
                longest = max(longest, run + first)
                run = len(chunk) - chunk.rfind(b"\n") - 1
            done += len(chunk)
            if progress is not None:
                progress(done, self.size)
        self.longest_line = max(longest, run)
        if done != self.size:
            raise SourceChangedError(self.path, f"changed while being read ({self.size} bytes, then {done})")
        self.content_hash = sha.hexdigest()
        return self.content_hash

    def check_unchanged(self) -> None:
        """Raise `SourceChangedError` if the open file was written to since it was opened.

        A file deleted or replaced by a rename is fine: the open one is what was read, intact.
        """
        info = os.fstat(self._file.fileno())
        if (info.st_size, info.st_mtime_ns) != self._stamp:
            raise SourceChangedError(self.path, "was modified while it was being loaded: nothing stored, try again")
