"""A process journal's entries, and the state of the process at any one of them.

The state comes from `devtool.journal`'s own `RewindEngine` (with `record=False`, so nothing is
written), run over the process's stored entries in their load order: the store and the journal
library cannot disagree on what a journal means. `anchor="before"` is the state just before the
entry (what the process saw when it acted: the rewind engine's answer); `anchor="after"` includes the
entry, found by rewinding to a marker placed right after it.

`journal_states` answers both at once for a page: one pass over the stored entries of the types
that carry state (`devtool.journal.state.STATE_TYPES`, read in load order, filtered by DuckDB),
folded with the journal library's own `ProcessState`, the rule the rewind engine rebuilds "before"
with. Tests hold it equal to `journal_state_at` at every entry of every corpus journal; it skips
the engine's per-entry bookkeeping, so a journal of 200,000 entries answers in well under a second.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import orjson

from devtool.journal import InMemoryJournal, JournalEntry, JournalError, RewindEngine, RewindMode
from devtool.journal.state import STATE_TYPES, ProcessState
from devtool.store import list_param
from devtool.store.database import Store
from devtool.store.errors import NotFoundError, StoreError

T = TypeVar("T")

# An entry type no engine gives meaning to: a marker after the entry whose "after" state is asked for.
_MARKER_TYPE = "devtool:state-marker"


@dataclass(frozen=True, slots=True)
class StoredEntry:
    entry_seq: int  # position in the store, in load order
    process_id: str
    entry_id: str
    entry_type: str
    timestamp: str  # as written
    ts_ms: float
    data: dict[str, Any]
    trace_id: str | None  # the agent run an invocation entry started


@dataclass(frozen=True, slots=True)
class JournalState:
    """The process's state at an entry, as `RewindEngine` rebuilds it."""

    process_id: str
    entry: StoredEntry
    anchor: str
    context_state: dict[str, Any]
    lifecycle_state: str
    conversation: list[dict[str, Any]]
    entries_before: int  # entries the state is built from


_ENTRY = "entry_seq, process_id, entry_id, entry_type, timestamp, ts_ms, data, trace_id"


def journal_entries(
    store: Store, process_id: str, *, entry_type: str | None = None, limit: int = 500, offset: int = 0
) -> list[StoredEntry]:
    """A process's entries in load order (of one type, if given)."""
    where, params = "process_id = $process", {"process": process_id, "limit": limit, "offset": offset}
    if entry_type is not None:
        where += " AND entry_type = $type"
        params["type"] = entry_type
    rows = store.query(
        f"SELECT {_ENTRY} FROM journal_entries WHERE {where} ORDER BY entry_seq LIMIT $limit OFFSET $offset", params
    )
    return [_entry(row) for row in rows]


def journal_state_at(
    store: Store, process_id: str, entry_id: str, *, anchor: Literal["before", "after"] = "before"
) -> JournalState:
    """The state of process `process_id` just before (or just after) entry `entry_id`."""
    rows = store.query(f"SELECT {_ENTRY} FROM journal_entries WHERE process_id = ? ORDER BY entry_seq", [process_id])
    if not rows:
        raise NotFoundError(f"no process journal {process_id!r} in the store")
    entries = [_entry(row) for row in rows]
    position = next((i for i, e in enumerate(entries) if e.entry_id == entry_id), None)
    if position is None:
        raise NotFoundError(f"no entry {entry_id!r} in process journal {process_id!r}")
    kept = entries if anchor == "before" else entries[: position + 1]
    target = entry_id
    journal = InMemoryJournal()
    try:
        records = [
            JournalEntry.from_dict(
                {
                    "entry_id": e.entry_id,
                    "process_id": e.process_id,
                    "timestamp": e.timestamp,
                    "entry_type": e.entry_type,
                    "data": e.data,
                }
            )
            for e in kept
        ]
        if anchor == "after":
            marker = JournalEntry(process_id=process_id, timestamp=records[-1].timestamp, entry_type=_MARKER_TYPE)
            records.append(marker)
            target = marker.entry_id
        result = _run(_rewind(journal, records, process_id, target))
    except JournalError as exc:
        raise StoreError(f"process journal {process_id!r}: {exc}") from exc
    return JournalState(
        process_id=process_id,
        entry=entries[position],
        anchor=anchor,
        context_state=result.context_state,
        lifecycle_state=result.lifecycle_state,
        conversation=result.conversation,
        entries_before=position if anchor == "before" else position + 1,
    )


def journal_states(store: Store, process_id: str, entry_id: str) -> tuple[JournalState, JournalState]:
    """The state of `process_id` just before and just after entry `entry_id`, in one pass."""
    found = store.query(
        f"SELECT {_ENTRY} FROM journal_entries WHERE process_id = $p AND entry_id = $e ORDER BY entry_seq LIMIT 1",
        {"p": process_id, "e": entry_id},
    )
    if not found:
        if not store.query("SELECT 1 FROM journal_entries WHERE process_id = ? LIMIT 1", [process_id]):
            raise NotFoundError(f"no process journal {process_id!r} in the store")
        raise NotFoundError(f"no entry {entry_id!r} in process journal {process_id!r}")
    entry = _entry(found[0])
    with store.reader() as cursor:
        position = cursor.execute(
            "SELECT count(*) FROM journal_entries WHERE process_id = ? AND entry_seq < ?", [process_id, entry.entry_seq]
        ).fetchall()[0][0]
        rows = cursor.execute(
            "SELECT entry_type, data FROM journal_entries "
            "WHERE process_id = $process AND entry_seq < $seq "
            f"AND entry_type IN (SELECT unnest({list_param.of('types')})) ORDER BY entry_seq",
            {"process": process_id, "seq": entry.entry_seq, "types": list_param.values(sorted(STATE_TYPES))},
        ).fetchall()
    state = ProcessState()
    for entry_type, data in rows:
        state.apply(entry_type, orjson.loads(data))
    before = _state(process_id, entry, "before", state, position)
    if entry.entry_type in STATE_TYPES:
        state.apply(entry.entry_type, entry.data)
    return before, _state(process_id, entry, "after", state, position + 1)


def _state(process_id: str, entry: StoredEntry, anchor: str, state: ProcessState, entries: int) -> JournalState:
    copied = state.copy()
    return JournalState(
        process_id=process_id,
        entry=entry,
        anchor=anchor,
        context_state=copied.context_state,
        lifecycle_state=copied.lifecycle_state,
        conversation=copied.conversation,
        entries_before=entries,
    )


async def _rewind(journal: InMemoryJournal, records: list[JournalEntry], process_id: str, target: str) -> Any:
    for record in records:
        await journal.append(record)
    engine = RewindEngine(journal)
    return await engine.apply(process_id=process_id, target_entry_id=target, mode=RewindMode.BOTH, record=False)


def _run(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run the journal library's coroutine to its end, from sync code, inside an event loop or not."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def _entry(row: tuple[Any, ...]) -> StoredEntry:
    seq, process_id, entry_id, entry_type, timestamp, ts_ms, data, trace_id = row
    return StoredEntry(seq, process_id, entry_id, entry_type, timestamp, ts_ms, orjson.loads(data), trace_id)
