"""One process's journal file on disk: its descriptors, its lock, its index, and crash repair.

Everything here is blocking and runs in worker threads (`FileJournal` awaits it). The guarantees:
- Durable appends: a batch of lines is written with one `write` and `fdatasync`ed before the call
  returns; if the write fails half way, the partial bytes are cut off again and the call raises.
- One writer at a time: a thread lock inside the process and an exclusive `flock` on the journal file
  across processes are held from the moment a writer looks at the end of the file until its lines are
  durable, so two writers (tasks, threads or processes) never interleave bytes.
- Torn tails: a crash can leave an unfinished last line (or a run of zero bytes). When the file is
  first opened, and before every append, anything after the last newline is cut off under the lock
  (it was never acknowledged: its append had not returned), reported with a `TornTailWarning` and
  kept in `repairs`. A reader that is not appending only ignores such a tail: it may be a write in
  progress of a writer that does not lock (the published library).
- Bad lines in the middle are skipped with a `BadLineWarning` naming the file and line number, once
  per line per open file.
- Checkpoints are written to a temporary file, fsync'd, renamed over the old one, and the directory
  fsync'd; the checkpoint entry is appended under the same lock, so file and entry always agree.
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path
from typing import Any

from devtool.journal.checkpoint_file import read_checkpoint, write_checkpoint
from devtool.journal.disk import datasync, exclusive_lock, fsync_directory, same_file, write_all
from devtool.journal.entries import JournalEntry, decode_line, encode_entry
from devtool.journal.errors import (
    BadLineWarning,
    CheckpointWarning,
    JournalError,
    JournalWarning,
    MalformedEntryError,
    TornTailWarning,
)
from devtool.journal.index import (
    CODE_OF,
    FOREIGN,
    MALFORMED,
    SALVAGED,
    VALID_CODES,
    Columns,
    IndexFile,
    classify,
    id_crc,
    type_code,
)

CHUNK = 4 << 20
_READ_ONLY = {errno.EACCES, errno.EPERM, errno.EROFS}
_CHECKPOINT = CODE_OF["checkpoint"]
_CRC = attrgetter("crc")
_CODE = attrgetter("code")


@dataclass(frozen=True, slots=True)
class TailRepair:
    """An unfinished last line cut off a journal file: where the file now ends, and what was cut."""

    path: str
    offset: int
    removed: int
    preview: bytes


@dataclass(frozen=True, slots=True)
class Encoded:
    """An entry as the line to append, with what its index record needs."""

    line: bytes
    crc: int
    code: int

    @classmethod
    def of(cls, entry: JournalEntry) -> Encoded:
        """Encode an entry for appending."""
        return cls(encode_entry(entry), id_crc(entry.entry_id), type_code(entry.entry_type))


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A consistent view of the file: its first `count` lines, and the checkpoint as it was then."""

    file: ProcessFile
    columns: Columns
    count: int
    checkpoint: dict[str, Any] | None


class ProcessFile:
    """The journal file of one process, opened lazily; safe to share between threads."""

    def __init__(self, directory: Path, process_id: str, stem: str) -> None:
        self.process_id = process_id
        self.directory = directory
        self.path = directory / f"{stem}.jsonl"
        self.index_path = directory / f"{stem}.jsonl.idx"
        self.checkpoint_path = directory / f"{stem}.checkpoint.json"
        self.repairs: list[TailRepair] = []
        self._mutex = threading.Lock()
        self._fd: int | None = None
        self._index: IndexFile | None = None
        self._writable = False
        self._columns = Columns()
        self._repair_pending = True

    # -- the three operations ------------------------------------------------------------------

    def append(self, batch: Sequence[Encoded]) -> None:
        """Append lines durably; they are on disk when this returns."""
        with self._mutex:
            fd = self._open(create=True)
            with exclusive_lock(fd):
                self._sync(repair=True)
                self._write(fd, batch)

    def snapshot(self, *, with_checkpoint: bool = False) -> Snapshot | None:
        """The file as it is now (None if the process has no journal file), and its checkpoint if asked."""
        with self._mutex:
            try:
                fd = self._open(create=False)
            except FileNotFoundError:
                return None
            with exclusive_lock(fd):
                self._sync(repair=False)
                checkpoint = self._read_checkpoint(fd) if with_checkpoint else None
                columns = self._columns
                return Snapshot(self, columns, len(columns), checkpoint)

    def checkpoint(self, state: bytes, entry: Encoded) -> None:
        """Replace the checkpoint file atomically, then append its entry, under one lock."""
        with self._mutex:
            fd = self._open(create=True)
            with exclusive_lock(fd):
                self._sync(repair=True)
                write_checkpoint(self.checkpoint_path, state)
                self._write(fd, [entry])

    def pread(self, size: int, offset: int) -> bytes:
        """Bytes of the journal (lines below a snapshot's count never change)."""
        if self._fd is None:
            raise JournalError(f"{self.path} is closed")
        out = os.pread(self._fd, size, offset)
        while len(out) < size:
            more = os.pread(self._fd, size - len(out), offset + len(out))
            if not more:
                raise JournalError(f"{self.path} is shorter than its index: was it truncated by another program?")
            out += more
        return out

    def close(self) -> None:
        """Close the descriptors (reopened on next use)."""
        with self._mutex:
            self._close()

    def _close(self) -> None:
        for fd in (self._fd, self._index.fd if self._index else None):
            if fd is not None:
                os.close(fd)
        self._fd = None
        self._index = None
        self._columns = Columns()
        self._repair_pending = True

    # -- opening -------------------------------------------------------------------------------

    def _open(self, *, create: bool) -> int:
        if self._fd is not None:
            if same_file(self._fd, self.path):
                return self._fd
            # Deleted or replaced by another program: appending to the old file would write where
            # nobody reads any more, so start over with whatever is at the path now.
            self._warn(JournalWarning(f"{self.path} was deleted or replaced while open; reopened"), 0)
            self._close()
        fd, created = self._open_journal(create)
        if created:
            fsync_directory(self.directory)
        self._fd = fd
        self._index = self._open_index()
        with exclusive_lock(fd):
            self._load_index(fd)
        return fd

    def _open_journal(self, create: bool) -> tuple[int, bool]:
        flags = os.O_RDWR | os.O_APPEND | os.O_CLOEXEC
        self._writable = True
        try:
            if create:
                with contextlib.suppress(FileExistsError):
                    return os.open(self.path, flags | os.O_CREAT | os.O_EXCL, 0o644), True
            return os.open(self.path, flags), False
        except FileNotFoundError:
            raise
        except OSError as exc:
            if create or exc.errno not in _READ_ONLY:
                raise JournalError(f"cannot open the journal {self.path} for writing: {exc.strerror}") from exc
        self._writable = False
        return os.open(self.path, os.O_RDONLY | os.O_CLOEXEC), False

    def _open_index(self) -> IndexFile | None:
        if self._writable:
            with contextlib.suppress(OSError):
                return IndexFile(os.open(self.index_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644), writable=True)
        with contextlib.suppress(OSError):
            return IndexFile(os.open(self.index_path, os.O_RDONLY | os.O_CLOEXEC), writable=False)
        return None

    def _load_index(self, fd: int) -> None:
        journal = os.fstat(fd)
        columns = self._index.load(journal) if self._index else None
        if columns is not None and len(columns) and not self._describes_last_line(fd, columns, journal.st_size):
            columns = None
        if columns is None:
            columns = Columns()
            if self._index:
                self._index.reset(journal)
        self._columns = columns
        self._report_lines(0)

    def _describes_last_line(self, fd: int, columns: Columns, size: int) -> bool:
        last = len(columns) - 1
        start, end = columns.start_of(last), columns.end
        if end > size or end <= start:
            return False
        line = os.pread(fd, end - start, start)
        return line.endswith(b"\n") and classify(line[:-1], self.process_id) == columns.info(last)

    # -- catching up with the file ---------------------------------------------------------------

    def _sync(self, *, repair: bool) -> None:
        """Index what was appended since we last looked; cut a torn tail if we may write."""
        assert self._fd is not None
        fd = self._fd
        size = os.fstat(fd).st_size
        if size < self._columns.end:
            self._warn(
                JournalWarning(
                    f"{self.path} is shorter than when it was last read (cut by another program?); reindexed"
                ),
                0,
            )
            self._columns = Columns()
            if self._index:
                self._index.reset(os.fstat(fd))
        known = len(self._columns)
        self._adopt_records(fd, size)
        stored = len(self._columns)
        self._index_lines(fd, size)
        if self._index:
            self._index.store(self._columns, stored)
        self._report_lines(known)
        if size > self._columns.end and (repair or self._repair_pending):
            self._cut_tail(fd, size)
        self._repair_pending = False

    def _adopt_records(self, fd: int, size: int) -> None:
        """Take the records another process appended to the index, as far as they are consistent."""
        if not self._index:
            return
        raw = self._index.read_records(len(self._columns))
        if not raw:
            return
        theirs = Columns()
        theirs.add_records(raw)
        previous, accepted = self._columns.end, 0
        for end, code in zip(theirs.ends, theirs.codes, strict=True):
            if end <= previous or end > size or code not in VALID_CODES:
                break
            previous, accepted = end, accepted + 1
        if accepted and os.pread(fd, 1, previous - 1) != b"\n":
            accepted = 0
        if accepted < len(theirs):
            self._index.keep(len(self._columns) + accepted)
        self._columns.extend(theirs.truncated(accepted))

    def _index_lines(self, fd: int, size: int) -> None:
        position = self._columns.end
        want = CHUNK
        while position < size:
            chunk = os.pread(fd, min(want, size - position), position)
            last = chunk.rfind(b"\n")
            if last < 0:
                if position + len(chunk) >= size:
                    return
                want *= 2  # one line longer than the chunk
                continue
            want = CHUNK
            start = 0
            while start <= last:
                stop = chunk.index(b"\n", start)
                self._columns.add(position + stop + 1, classify(chunk[start:stop], self.process_id))
                start = stop + 1
            position += last + 1

    def _cut_tail(self, fd: int, size: int) -> None:
        end = self._columns.end
        if not self._writable:
            return
        preview = os.pread(fd, min(size - end, 80), end)
        os.ftruncate(fd, end)
        os.fsync(fd)
        repair = TailRepair(str(self.path), end, size - end, preview)
        self.repairs.append(repair)
        self._warn(
            TornTailWarning(
                f"{self.path}:{len(self._columns) + 1}: cut off an unfinished last line of {repair.removed} bytes "
                f"at offset {end} (a writer crashed before its append returned): {preview[:40]!r}"
            ),
            len(self._columns) + 1,
        )

    def _report_lines(self, first: int) -> None:
        """Warn about each line from `first` on that was skipped or repaired."""
        codes, flags = self._columns.codes, self._columns.flags
        line = codes.find(0, first)
        while line >= 0:
            if flags[line] & (MALFORMED | FOREIGN):
                self._warn(BadLineWarning(f"{self.path}:{line + 1}: {self._why_bad(line)}; line skipped"), line + 1)
            line = codes.find(0, line + 1)
        line = flags.find(SALVAGED, first)
        while line >= 0:
            self._warn(
                BadLineWarning(
                    f"{self.path}:{line + 1}: starts with the unfinished tail of an earlier write (a crash); "
                    "the whole entry after it was kept"
                ),
                line + 1,
            )
            line = flags.find(SALVAGED, line + 1)

    def _warn(self, warning: Warning, line: int, path: Path | None = None) -> None:
        # Located at the journal line itself: that is where the reader has to look.
        warnings.warn_explicit(warning, type(warning), str(path or self.path), line)

    def _why_bad(self, line: int) -> str:
        start = self._columns.start_of(line)
        raw = self.pread(self._columns.ends[line] - start - 1, start)
        try:
            entry = decode_line(raw).entry
        except MalformedEntryError as exc:
            return str(exc)
        return f"belongs to process {entry.process_id!r}, not {self.process_id!r}"

    # -- writing -------------------------------------------------------------------------------

    def _write(self, fd: int, batch: Sequence[Encoded]) -> None:
        if not self._writable:
            raise JournalError(f"the journal {self.path} is read-only")
        start = self._columns.end
        lines = [item.line for item in batch]
        try:
            write_all(fd, b"".join(lines))
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, start)
            raise JournalError(f"could not append to {self.path}: {exc.strerror}; nothing was written") from exc
        try:
            datasync(fd)
        except OSError as exc:
            raise JournalError(f"could not make {self.path} durable (fsync failed: {exc.strerror})") from exc
        first = len(self._columns)
        self._columns.add_written(start, map(len, lines), map(_CRC, batch), bytes(map(_CODE, batch)))
        if self._index:
            self._index.store(self._columns, first)

    # -- reading the checkpoint ----------------------------------------------------------------

    def _read_checkpoint(self, fd: int) -> dict[str, Any] | None:
        """The checkpoint file; if it is unreadable or gone, the last checkpoint entry's state."""
        state, problem = read_checkpoint(self.checkpoint_path)
        if problem is None:
            return state
        fallback = self._last_checkpoint_entry(fd)
        if fallback is not None:
            self._warn(
                CheckpointWarning(
                    f"{self.checkpoint_path} {problem}; using the state of the last checkpoint entry in {self.path}"
                ),
                1,
                self.checkpoint_path,
            )
        return fallback

    def _last_checkpoint_entry(self, fd: int) -> dict[str, Any] | None:
        line = self._columns.codes.rfind(_CHECKPOINT)
        if line < 0:
            return None
        start = self._columns.start_of(line)
        data = decode_line(os.pread(fd, self._columns.ends[line] - start - 1, start)).entry.data
        state = data.get("state")
        return dict(state) if isinstance(state, dict) else dict(data)
