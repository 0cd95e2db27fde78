"""Rewinding a process from the DevTool: the plan (blast radius) of a rewind to an entry, and Apply.

The plan and the rewound state come from `devtool.journal` itself (`RewindEngine.plan`,
`apply_rewind`), so the DevTool and the process agree on what a rewind means. Apply records the
`rewind` entry (actor: the signed-in user) and, right after it, a checkpoint of the rewound state, so
the process's own `recover` resumes from it. The journal is never edited: entries are appended.

Where Apply writes:
- **The process's journal file**, when the store loaded the process from one that is still there,
  writable, and laid out as `FileJournal` keeps it (`<dir>/<process>.jsonl`): `apply_rewind` runs on
  that `FileJournal` (its lock keeps a running process's appends from interleaving), then the file is
  loaded again, which adds just the new entries to the store, so the page shows them.
- **The DevTool only**, otherwise (an uploaded journal, a file gone, moved or read-only): the rewind
  is computed over the stored entries and its entries are written to a journal file in the DevTool's
  `rewinds` folder beside its database, and loaded from there. The page says that the process's own
  journal did not get it.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from devtool.journal import (
    FileJournal,
    InMemoryJournal,
    JournalEntry,
    JournalError,
    RewindEngine,
    RewindMode,
    RewindPlan,
    RewindResult,
    apply_rewind,
)
from devtool.journal.entries import encode_entry
from devtool.journal.names import file_stem
from devtool.store import Store, StoreError, load_file
from devtool.store.queries import journal_entries
from devtool.store.queries.journal_files import journal_files

ALL_ENTRIES = 1 << 62


class ProcessRewindError(Exception):
    """A rewind that cannot be planned or applied; the message says why."""


@dataclass(frozen=True)
class Destination:
    """Where Apply would write a rewind of a process: its own journal file, or the DevTool's folder."""

    path: Path  # the process's journal file; or the folder a DevTool-only rewind file is written in
    own: bool  # the process's own journal: the process sees the rewind when it recovers


@dataclass(frozen=True)
class Applied:
    """A rewind that was recorded: its result, and the journal file that got its entries."""

    result: RewindResult
    written_to: Path
    in_process_journal: bool


def plan_rewind(store: Store, process_id: str, entry_id: str, mode: str = "both") -> RewindPlan:
    """What rewinding `process_id` to just before `entry_id` would undo; nothing is written."""
    chosen = _mode(mode)

    async def plan() -> RewindPlan:
        journal = await _stored_journal(store, process_id)
        return await RewindEngine(journal).plan(process_id=process_id, target_entry_id=entry_id, mode=chosen)

    try:
        return asyncio.run(plan())
    except JournalError as exc:
        raise ProcessRewindError(str(exc)) from None


def destination(store: Store, process_id: str) -> Destination:
    """Where Apply would record a rewind of `process_id` now (see the module docstring)."""
    own = _writable_journal_file(store, process_id)
    return Destination(own, True) if own is not None else Destination(rewinds_dir(store), False)


def apply_rewind_here(
    store: Store, process_id: str, entry_id: str, mode: str, *, actor: str, expected: Path | None = None
) -> Applied:
    """Record a rewind of `process_id` to just before `entry_id` (see the module docstring for where).

    With `expected`, the place the user was shown and confirmed (`destination(...).path`): when the
    rewind would now go elsewhere (the file was moved, made read-only, or loaded from a new place),
    nothing is written and `ProcessRewindError` says where it would go.
    """
    chosen = _mode(mode)
    own = _writable_journal_file(store, process_id)
    now = own if own is not None else rewinds_dir(store)
    if expected is not None and expected != now:
        raise ProcessRewindError(
            f"the rewind would now be written to {now}, not to {expected} as shown: nothing was written; "
            "look at the plan again"
        )
    try:
        if own is not None:
            result = asyncio.run(_apply_to_file(own, process_id, entry_id, chosen, actor))
            written = own
        else:
            result, written = asyncio.run(
                _apply_to_copy(store, process_id, entry_id, chosen, actor, rewinds_dir(store))
            )
    except JournalError as exc:
        raise ProcessRewindError(str(exc)) from None
    try:
        load_file(store, written)
    except StoreError as exc:
        raise ProcessRewindError(
            f"the rewind was recorded in {written}, but the store could not load it: {exc}"
        ) from None
    return Applied(result, written, own is not None)


def rewinds_dir(store: Store) -> Path:
    """Where rewinds the DevTool records on its own (see the module docstring): beside its database."""
    return store.path.parent / f"{store.path.stem}-rewinds"


async def _apply_to_file(path: Path, process_id: str, entry_id: str, mode: RewindMode, actor: str) -> RewindResult:
    async with FileJournal(path.parent) as journal:
        return await apply_rewind(journal, process_id=process_id, target_entry_id=entry_id, mode=mode, actor=actor)


async def _apply_to_copy(
    store: Store, process_id: str, entry_id: str, mode: RewindMode, actor: str, folder: Path
) -> tuple[RewindResult, Path]:
    journal = await _stored_journal(store, process_id)
    stored = await journal.read(process_id)
    checkpoints = [e for e in stored if e.entry_type == "checkpoint"]
    base = _checkpoint_state(checkpoints[-1]) if checkpoints else {}
    result = await apply_rewind(
        journal, process_id=process_id, target_entry_id=entry_id, mode=mode, actor=actor, state=base
    )
    new = (await journal.read(process_id))[len(stored) :]
    folder.mkdir(parents=True, exist_ok=True)
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", process_id)[:80]
    target = folder / f"{safe}.rewind-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}-{len(stored)}.jsonl"
    target.write_bytes(b"".join(encode_entry(entry) for entry in new))
    return result, target


async def _stored_journal(store: Store, process_id: str) -> InMemoryJournal:
    """The process's journal as the store holds it, in an `InMemoryJournal` the engines can read."""
    entries = journal_entries(store, process_id, limit=ALL_ENTRIES)
    if not entries:
        raise ProcessRewindError(f"no process journal {process_id!r} in the store")
    journal = InMemoryJournal()
    for entry in entries:
        record = {
            "entry_id": entry.entry_id,
            "process_id": entry.process_id,
            "timestamp": entry.timestamp,
            "entry_type": entry.entry_type,
            "data": entry.data,
        }
        await journal.append(JournalEntry.from_dict(record))
    return journal


def _writable_journal_file(store: Store, process_id: str) -> Path | None:
    """The process's own journal file, if Apply may append to it."""
    for path in journal_files(store, process_id):
        expected = path.parent / f"{file_stem(process_id)}.jsonl"
        if path == expected and path.is_file() and os.access(path, os.W_OK) and os.access(path.parent, os.W_OK):
            return path
    return None


def _checkpoint_state(entry: JournalEntry) -> dict[str, Any]:
    state = entry.data.get("state", entry.data)
    return dict(state) if isinstance(state, dict) else {}


def _mode(mode: str) -> RewindMode:
    try:
        chosen = RewindMode(mode)
    except ValueError:
        raise ProcessRewindError(
            f"mode must be one of both, conversation_only, code_only, summarize; not {mode[:40]!r}"
        ) from None
    if chosen is RewindMode.CANCEL:
        raise ProcessRewindError("cancel applies nothing: preview the plan instead")
    return chosen
