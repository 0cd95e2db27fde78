"""A read-only view of one process's entries, as the replay and rewind engines need it.

The engines never ask for "all entries as objects": they count entries by type from a position,
find an entry by id, and read the data of the few types that change state. `EntryLog` is that
interface. `ListLog` implements it over a list of entries (the in-memory journal, or any
`JournalProvider` through its `read`); the file journal implements it over its sidecar index, so
the same engine code stays fast on a journal of a million entries.

Positions are opaque integers, increasing in journal order, from 0 to `end`; a position need not
hold an entry (a file's position is a line, and a line may be blank or bad).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any, Protocol

from devtool.journal.entries import JournalEntry
from devtool.journal.protocol import JournalProvider


class EntryLog(Protocol):
    """One process's entries at one moment, with the checkpoint that goes with them."""

    @property
    def end(self) -> int:
        """One past the last position."""

    @property
    def checkpoint(self) -> dict[str, Any] | None:
        """The process's last checkpoint state (what `last_checkpoint` returns), taken with the entries."""

    def count(self, start: int = 0, types: frozenset[str] | None = None) -> int:
        """How many entries from `start` on (of these types)."""

    def find(self, entry_id: str) -> int | None:
        """The position of the first entry with this id."""

    def entry(self, position: int) -> JournalEntry:
        """The entry at a position that holds one."""

    def last_of(self, entry_type: str) -> int | None:
        """The position of the last entry of this type."""

    def last_from(self, start: int) -> JournalEntry | None:
        """The last entry at or after `start`."""

    def type_counts(self, start: int) -> dict[str, int]:
        """How many entries of each type from `start` on."""

    def scan(self, types: frozenset[str], start: int, stop: int) -> Iterator[tuple[int, str, dict[str, Any]]]:
        """`(position, entry_type, data)` of the entries of these types in `[start, stop)`, in order."""

    def entries(self) -> Iterator[JournalEntry]:
        """Every entry, in order."""


class ListLog:
    """An `EntryLog` over a list of entries."""

    def __init__(self, entries: list[JournalEntry], checkpoint: dict[str, Any] | None) -> None:
        self._entries = entries
        self._checkpoint = checkpoint

    @classmethod
    async def read(cls, journal: JournalProvider, process_id: str, *, with_checkpoint: bool = False) -> ListLog:
        """The log of any journal provider, through its public API."""
        checkpoint = await journal.last_checkpoint(process_id) if with_checkpoint else None
        return cls(await journal.read(process_id), checkpoint)

    @property
    def end(self) -> int:
        return len(self._entries)

    @property
    def checkpoint(self) -> dict[str, Any] | None:
        return self._checkpoint

    def count(self, start: int = 0, types: frozenset[str] | None = None) -> int:
        if types is None:
            return len(self._entries) - start
        return sum(1 for entry in self._entries[start:] if entry.entry_type in types)

    def find(self, entry_id: str) -> int | None:
        return next((i for i, entry in enumerate(self._entries) if entry.entry_id == entry_id), None)

    def entry(self, position: int) -> JournalEntry:
        return self._entries[position]

    def last_of(self, entry_type: str) -> int | None:
        positions = (i for i in range(len(self._entries) - 1, -1, -1) if self._entries[i].entry_type == entry_type)
        return next(positions, None)

    def last_from(self, start: int) -> JournalEntry | None:
        return self._entries[-1] if start < len(self._entries) else None

    def type_counts(self, start: int) -> dict[str, int]:
        return dict(Counter(entry.entry_type for entry in self._entries[start:]))

    def scan(self, types: frozenset[str], start: int, stop: int) -> Iterator[tuple[int, str, dict[str, Any]]]:
        for position in range(start, stop):
            entry = self._entries[position]
            if entry.entry_type in types:
                yield position, entry.entry_type, entry.data

    def entries(self) -> Iterator[JournalEntry]:
        return iter(self._entries)


async def open_log(journal: JournalProvider, process_id: str, *, with_checkpoint: bool = False) -> EntryLog:
    """The fastest consistent view a journal offers of one process (its own `log()`, if it has one)."""
    log = getattr(journal, "log", None)
    if log is not None:
        view: EntryLog = await log(process_id, with_checkpoint=with_checkpoint)
        return view
    return await ListLog.read(journal, process_id, with_checkpoint=with_checkpoint)
