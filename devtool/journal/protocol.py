"""The one async interface every journal backend implements (the published `JournalProvider`), and its read filters."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol, runtime_checkable

from devtool.journal.entries import JournalEntry


@runtime_checkable
class JournalProvider(Protocol):
    """An append-only store of process journals: `InMemoryJournal`, `FileJournal`, or your own."""

    async def append(self, entry: JournalEntry) -> None:
        """Append an entry to its process's journal."""

    async def read(
        self,
        process_id: str,
        *,
        since: datetime | None = None,
        entry_type: str | None = None,
        limit: int | None = None,
    ) -> list[JournalEntry]:
        """A process's entries in order: from `since` on (inclusive), of one type, the first `limit`."""

    async def checkpoint(self, process_id: str, state: dict[str, Any]) -> None:
        """Store a full state snapshot and append a `checkpoint` entry holding it."""

    async def last_checkpoint(self, process_id: str) -> dict[str, Any] | None:
        """The most recent checkpoint state, or None."""

    async def close(self) -> None:
        """Release what the journal holds open."""


@dataclass(frozen=True, slots=True)
class ReadFilter:
    """The filters of `read`, checked once: a naive `since` is UTC, a negative `limit` an error.

    `limit=0` returns nothing (the published file journal returned one entry).
    """

    since: datetime | None = None
    entry_type: str | None = None
    limit: int | None = None

    @classmethod
    def of(cls, since: datetime | None, entry_type: str | None, limit: int | None) -> ReadFilter:
        """Validate the arguments of a `read` call."""
        if limit is not None and limit < 0:
            raise ValueError(f"limit must be 0 or more, not {limit}")
        if since is not None and since.tzinfo is None:
            since = since.replace(tzinfo=UTC)
        return cls(since, entry_type, limit)

    def matches(self, entry: JournalEntry) -> bool:
        """Whether an entry passes `since` and `entry_type`."""
        if self.entry_type is not None and entry.entry_type != self.entry_type:
            return False
        return self.since is None or entry.timestamp >= self.since

    def apply(self, entries: Iterable[JournalEntry]) -> list[JournalEntry]:
        """The entries that pass, up to `limit`."""
        if self.limit == 0:
            return []
        selected: list[JournalEntry] = []
        for entry in entries:
            if self.matches(entry):
                selected.append(entry)
                if self.limit is not None and len(selected) >= self.limit:
                    break
        return selected
