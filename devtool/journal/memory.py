"""`InMemoryJournal`: the journal for tests and development, with the file journal's answers.

Entries are kept as the JSON lines a `FileJournal` would write and read back on every `read`, so the
two backends agree on everything (timestamps, values that are not JSON, key order), and neither a
caller mutating an entry it appended nor one mutating an entry it read can edit the journal.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import orjson

from devtool.journal.entries import JournalEntry, decode_line, encode_entry
from devtool.journal.log import ListLog
from devtool.journal.protocol import ReadFilter


class InMemoryJournal:
    """A `JournalProvider` that keeps every process's journal in memory."""

    def __init__(self) -> None:
        self._lines: dict[str, list[bytes]] = {}
        self._checkpoints: dict[str, bytes] = {}

    async def append(self, entry: JournalEntry) -> None:
        """Append an entry to its process's journal."""
        self._lines.setdefault(entry.process_id, []).append(encode_entry(entry))

    async def read(
        self,
        process_id: str,
        *,
        since: datetime | None = None,
        entry_type: str | None = None,
        limit: int | None = None,
    ) -> list[JournalEntry]:
        """A process's entries in order, filtered (see `ReadFilter`)."""
        return ReadFilter.of(since, entry_type, limit).apply(self._entries(process_id))

    async def checkpoint(self, process_id: str, state: dict[str, Any]) -> None:
        """Keep a copy of the state as the last checkpoint, and append a `checkpoint` entry with it."""
        stored = orjson.dumps(state, default=str, option=orjson.OPT_NON_STR_KEYS)
        self._checkpoints[process_id] = stored
        await self.append(
            JournalEntry(process_id=process_id, entry_type="checkpoint", data={"state": orjson.loads(stored)})
        )

    async def last_checkpoint(self, process_id: str) -> dict[str, Any] | None:
        """A copy of the last checkpoint state, or None."""
        stored = self._checkpoints.get(process_id)
        return None if stored is None else dict(orjson.loads(stored))

    async def log(self, process_id: str, *, with_checkpoint: bool = False) -> ListLog:
        """The process's entries (and checkpoint) for the engines."""
        checkpoint = await self.last_checkpoint(process_id) if with_checkpoint else None
        return ListLog(self._entries(process_id), checkpoint)

    async def close(self) -> None:
        """Nothing to release."""

    def _entries(self, process_id: str) -> list[JournalEntry]:
        return [decode_line(line[:-1]).entry for line in self._lines.get(process_id, ())]

    def __repr__(self) -> str:
        return f"InMemoryJournal(processes={len(self._lines)})"
