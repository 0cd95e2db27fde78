"""`FileLog`: the `EntryLog` of a journal file, answered from its sidecar index.

Counting entries by type is `bytes.count` over the column of type codes; finding an entry by id is a
search for its CRC-32 in the column of id hashes, confirmed by reading that one line; only the lines
whose data the engines need are read (in 4 MiB sequential chunks) and parsed, with orjson.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from devtool.journal.entries import JournalEntry, decode_line
from devtool.journal.errors import JournalError, MalformedEntryError
from devtool.journal.index import CODE_OF, NOT_AN_ENTRY, OTHER, SALVAGED, TYPE_OF, id_crc, type_code
from devtool.journal.process_file import CHUNK, Snapshot
from devtool.journal.protocol import ReadFilter


class FileLog:
    """A snapshot of one process's journal file (later appends are not seen)."""

    def __init__(self, snapshot: Snapshot) -> None:
        self._file = snapshot.file
        self._checkpoint = snapshot.checkpoint
        self._count = snapshot.count
        columns = snapshot.columns
        self._ends = columns.ends
        self._codes = bytes(columns.codes[: snapshot.count])
        self._flags = columns.flags
        self._crcs = columns.crcs

    @property
    def end(self) -> int:
        return self._count

    @property
    def checkpoint(self) -> dict[str, Any] | None:
        return self._checkpoint

    def count(self, start: int = 0, types: frozenset[str] | None = None) -> int:
        codes = self._codes
        if types is None:
            return self._count - start - codes.count(NOT_AN_ENTRY, start)
        known = [CODE_OF[name] for name in types if name in CODE_OF]
        total = sum(codes.count(code, start) for code in known)
        if len(known) < len(types):
            total += sum(1 for position in self._positions(OTHER, start) if self._type_at(position) in types)
        return total

    def find(self, entry_id: str) -> int | None:
        hashes = self._crcs[: self._count].tobytes()
        needle = struct.pack("=I", id_crc(entry_id))
        offset = hashes.find(needle)
        while offset >= 0:
            position, misaligned = divmod(offset, 4)
            if not misaligned and self._codes[position] != NOT_AN_ENTRY and self.entry(position).entry_id == entry_id:
                return position
            offset = hashes.find(needle, offset + 1)
        return None

    def entry(self, position: int) -> JournalEntry:
        return self._decode(position, self._line(position))

    def last_of(self, entry_type: str) -> int | None:
        code = type_code(entry_type)
        position = self._codes.rfind(code)
        while position >= 0 and code == OTHER and self._type_at(position) != entry_type:
            position = self._codes.rfind(code, 0, position)
        return position if position >= 0 else None

    def last_from(self, start: int) -> JournalEntry | None:
        for position in range(self._count - 1, start - 1, -1):
            if self._codes[position] != NOT_AN_ENTRY:
                return self.entry(position)
        return None

    def type_counts(self, start: int) -> dict[str, int]:
        counts = {TYPE_OF[code]: self._codes.count(code, start) for code in TYPE_OF}
        for position in self._positions(OTHER, start):
            name = self._type_at(position)
            counts[name] = counts.get(name, 0) + 1
        return {name: count for name, count in counts.items() if count}

    def scan(self, types: frozenset[str], start: int, stop: int) -> Iterator[tuple[int, str, dict[str, Any]]]:
        wanted = bytearray(256)
        for name in types:
            wanted[type_code(name)] = 1
        codes = self._codes
        positions = (position for position in range(start, stop) if wanted[codes[position]])
        for position, line in self._lines(positions):
            code = codes[position]
            if code == OTHER or self._flags[position] & SALVAGED:
                entry = self._decode(position, line)
                if entry.entry_type in types:
                    yield position, entry.entry_type, entry.data
                continue
            try:
                data = orjson.loads(line).get("data", {})
            except orjson.JSONDecodeError:
                data = self._decode(position, line).data
            yield position, TYPE_OF[code], data

    def entries(self) -> Iterator[JournalEntry]:
        positions = (position for position in range(self._count) if self._codes[position] != NOT_AN_ENTRY)
        for position, line in self._lines(positions):
            yield self._decode(position, line)

    def read(self, selection: ReadFilter) -> list[JournalEntry]:
        """`read` over the snapshot: only lines of the asked type are parsed."""
        if selection.entry_type is None:
            return selection.apply(self.entries())
        positions = self._positions(type_code(selection.entry_type), 0)
        return selection.apply(self._decode(position, line) for position, line in self._lines(positions))

    # -- lines ---------------------------------------------------------------------------------

    def _positions(self, code: int, start: int) -> Iterator[int]:
        position = self._codes.find(code, start)
        while position >= 0:
            yield position
            position = self._codes.find(code, position + 1)

    def _type_at(self, position: int) -> str:
        code = self._codes[position]
        return TYPE_OF[code] if code in TYPE_OF else self.entry(position).entry_type

    def _start(self, position: int) -> int:
        return self._ends[position - 1] if position else 0

    def _line(self, position: int) -> bytes:
        start = self._start(position)
        return self._file.pread(self._ends[position] - start - 1, start)

    def _lines(self, positions: Iterable[int]) -> Iterator[tuple[int, bytes]]:
        """The lines at these increasing positions, read in large sequential chunks."""
        limit = self._ends[self._count - 1] if self._count else 0
        chunk, chunk_start, chunk_end = b"", 0, 0
        for position in positions:
            start, end = self._start(position), self._ends[position]
            if start < chunk_start or end > chunk_end:
                chunk_start = start
                chunk = self._file.pread(min(max(CHUNK, end - start), limit - start), start)
                chunk_end = start + len(chunk)
            yield position, chunk[start - chunk_start : end - chunk_start - 1]

    def _decode(self, position: int, line: bytes) -> JournalEntry:
        try:
            return decode_line(line).entry
        except MalformedEntryError as exc:
            raise JournalError(
                f"{self._file.path}:{position + 1} changed after it was indexed ({exc}): "
                "was the file rewritten by another program?"
            ) from None
