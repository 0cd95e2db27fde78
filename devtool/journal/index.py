"""The sidecar index of a journal file: for every line, where it ends, its entry type and its id's hash.

Why: `recover`, `plan` and `apply` on a journal of a million entries must not parse a million lines.
With the index they count entry types with `bytes.count`, find a rewind target by the CRC-32 of its
id, and parse only the lines that change state. The published library parsed every line into objects
(about 9 s and 1.15 GB for a 270 MB journal); see BENCHMARKS.md for ours.

`<stem>.jsonl.idx` is a 32-byte header (magic, version, and the device and inode of the journal it
describes) and then one 16-byte record per line of the journal, blank and bad lines included, in
order: the offset just past the line's newline (u64), CRC-32 of the entry's effective id (u32), the
type code (u8), flags (u8), two spare bytes. A line's number is its record's position plus one.

The index is a cache and never trusted over the journal (the rules are applied by `ProcessFile`):
- records are written only under the journal's lock, after the lines they describe are durable, so a
  crash leaves the index behind the journal (the missing lines are indexed on the next open), never
  ahead of it; a half-written record is ignored and overwritten;
- on open, the header must name this journal file and the last record must describe, exactly, a
  whole line that is there; otherwise the index is rebuilt from the journal;
- lines appended by another writer (another process, or the published library, which knows nothing
  of the index) are found by comparing the journal's size with what the index covers, and indexed.
"""

from __future__ import annotations

import contextlib
import os
import struct
import sys
import zlib
from array import array
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import accumulate, islice

from devtool.journal.entries import KNOWN_TYPES, decode_line
from devtool.journal.errors import MalformedEntryError

MAGIC = b"DTJINDEX"
VERSION = 1
HEADER = struct.Struct("<8sIIQQ")
RECORD_SIZE = 16

# Type codes: 0 is a line that is not an entry, 1.. the known types, OTHER any other type.
NOT_AN_ENTRY = 0
OTHER = 255
CODE_OF: dict[str, int] = {name: code for code, name in enumerate(KNOWN_TYPES, start=1)}
TYPE_OF: dict[int, str] = {code: name for name, code in CODE_OF.items()}
VALID_CODES = frozenset({NOT_AN_ENTRY, OTHER, *TYPE_OF})

# Flags: why a line is not an entry, or how it was read.
BLANK = 1
MALFORMED = 2
FOREIGN = 4
SALVAGED = 8


@dataclass(frozen=True, slots=True)
class LineInfo:
    """What the index keeps of one line."""

    crc: int
    code: int
    flags: int = 0


BLANK_LINE = LineInfo(0, NOT_AN_ENTRY, BLANK)


def id_crc(entry_id: str) -> int:
    """The hash under which the index files an entry id (collisions are resolved by reading the line)."""
    return zlib.crc32(entry_id.encode("utf-8", "surrogatepass"))


def type_code(entry_type: str) -> int:
    """The index code of an entry type."""
    return CODE_OF.get(entry_type, OTHER)


def classify(line: bytes, process_id: str) -> LineInfo:
    """Read one line (without its newline) as the index sees it."""
    if not line.strip():
        return BLANK_LINE
    try:
        decoded = decode_line(line)
    except MalformedEntryError:
        return LineInfo(0, NOT_AN_ENTRY, MALFORMED)
    entry = decoded.entry
    if entry.process_id and entry.process_id != process_id:
        return LineInfo(0, NOT_AN_ENTRY, FOREIGN)
    return LineInfo(id_crc(entry.entry_id), type_code(entry.entry_type), SALVAGED if decoded.salvaged else 0)


class Columns:
    """The index in memory, one column per field; append-only, so a length bounds a consistent view."""

    __slots__ = ("codes", "crcs", "ends", "flags")

    def __init__(self) -> None:
        self.ends = array("Q")
        self.crcs = array("I")
        self.codes = bytearray()
        self.flags = bytearray()

    def __len__(self) -> int:
        return len(self.codes)

    @property
    def end(self) -> int:
        """The journal offset just past the last indexed line."""
        return self.ends[-1] if self.ends else 0

    def start_of(self, line: int) -> int:
        """The journal offset where a line starts."""
        return self.ends[line - 1] if line else 0

    def info(self, line: int) -> LineInfo:
        """One line's record."""
        return LineInfo(self.crcs[line], self.codes[line], self.flags[line])

    def add(self, end: int, info: LineInfo) -> None:
        """Index one more line."""
        self.ends.append(end)
        self.crcs.append(info.crc)
        self.codes.append(info.code)
        self.flags.append(info.flags)

    def add_written(self, start: int, lengths: Iterable[int], crcs: Iterable[int], codes: bytes) -> None:
        """Index lines just appended from `start` (done in C: a batch can hold thousands of lines)."""
        self.ends.extend(islice(accumulate(lengths, initial=start), 1, None))
        self.crcs.extend(crcs)
        self.codes += codes
        self.flags += bytes(len(codes))

    def add_records(self, raw: bytes | memoryview) -> None:
        """Index whole records as stored on disk (column by column, in C)."""
        view = memoryview(raw)
        if not len(view):
            return
        ends = array("Q", view.cast("Q")[0::2].tobytes())
        crcs = array("I", view.cast("I")[2::4].tobytes())
        if sys.byteorder == "big":
            ends.byteswap()
            crcs.byteswap()
        self.ends.extend(ends)
        self.crcs.extend(crcs)
        self.codes += view[12::RECORD_SIZE].tobytes()
        self.flags += view[13::RECORD_SIZE].tobytes()

    def records(self, first: int) -> bytes:
        """Lines `first..` as records for the disk."""
        count = len(self) - first
        out = bytearray(count * RECORD_SIZE)
        if not count:
            return bytes(out)
        ends = self.ends[first:]
        crcs = self.crcs[first:]
        if sys.byteorder == "big":
            ends.byteswap()
            crcs.byteswap()
        view = memoryview(out)
        view.cast("Q")[0::2] = memoryview(ends)
        view.cast("I")[2::4] = memoryview(crcs)
        view[12::RECORD_SIZE] = self.codes[first:]
        view[13::RECORD_SIZE] = self.flags[first:]
        return bytes(out)

    def extend(self, other: Columns) -> None:
        """Index the lines of `other` after these."""
        self.ends.extend(other.ends)
        self.crcs.extend(other.crcs)
        self.codes += other.codes
        self.flags += other.flags

    def truncated(self, count: int) -> Columns:
        """The first `count` lines, as new columns."""
        head = Columns()
        head.ends = self.ends[:count]
        head.crcs = self.crcs[:count]
        head.codes = self.codes[:count]
        head.flags = self.flags[:count]
        return head


class IndexFile:
    """The index on disk: a header naming its journal, then records. All writes happen under the lock."""

    def __init__(self, fd: int, *, writable: bool) -> None:
        self.fd = fd
        self.writable = writable

    def load(self, journal: os.stat_result) -> Columns | None:
        """The stored records, or None if the file is not an index of this journal."""
        size = os.fstat(self.fd).st_size
        if size < HEADER.size:
            return None
        magic, version, _spare, dev, ino = HEADER.unpack(os.pread(self.fd, HEADER.size, 0))
        if (magic, version, dev, ino) != (MAGIC, VERSION, journal.st_dev, journal.st_ino):
            return None
        columns = Columns()
        columns.add_records(self.read_records(0))
        return columns

    def read_records(self, first: int) -> bytes:
        """The whole records from position `first` on (a half-written last one is left out)."""
        start = HEADER.size + first * RECORD_SIZE
        available = os.fstat(self.fd).st_size - start
        if available < RECORD_SIZE:
            return b""
        return _pread_all(self.fd, available - available % RECORD_SIZE, start)

    def reset(self, journal: os.stat_result) -> None:
        """Empty the index and name the journal it now describes."""
        if not self.writable:
            return
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, HEADER.pack(MAGIC, VERSION, 0, journal.st_dev, journal.st_ino), 0)

    def store(self, columns: Columns, first: int) -> None:
        """Write records `first..` in place (over any half-written record), and end the file there.

        Not fsync'd: losing the tail of the index in a power cut only means reindexing those lines.
        """
        if not self.writable or first >= len(columns):
            return
        start = HEADER.size + first * RECORD_SIZE
        try:
            os.pwrite(self.fd, columns.records(first), start)
            os.ftruncate(self.fd, HEADER.size + len(columns) * RECORD_SIZE)
        except OSError:
            # A full disk must not fail an append whose line is already durable: the index is only
            # a cache, and the lines it misses are indexed again on the next open.
            with contextlib.suppress(OSError):
                os.ftruncate(self.fd, start)

    def keep(self, count: int) -> None:
        """Drop the records after the first `count` (they do not describe this journal)."""
        if self.writable:
            os.ftruncate(self.fd, HEADER.size + count * RECORD_SIZE)


def _pread_all(fd: int, size: int, offset: int) -> bytes:
    chunks: list[bytes] = []
    while size > 0:
        chunk = os.pread(fd, size, offset)
        if not chunk:
            break
        chunks.append(chunk)
        size -= len(chunk)
        offset += len(chunk)
    return b"".join(chunks)
