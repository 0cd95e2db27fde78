"""The process journal: the append-only ledger of a long-lived agent process, and its two engines.

A process (woken by cron ticks and webhooks, keeping its own state across invocations) appends every
decision to a journal: lifecycle transitions, triggers, invocations, context updates, tool calls,
conversation, checkpoints. `ReplayEngine` rebuilds its current state forward from the last
checkpoint; `RewindEngine` rebuilds the state just before any entry, previews a rewind and applies
one of five modes, recording the rewind as a new entry (the journal is never edited).
`ProcessRecorder` writes a process's journal and runs each invocation's agent under
`devtool.core.run_with`, linking the journal to the agent trace by its `trace_id`.

The API is the one the Python library `promptise` published for this design, and journals move
between the two unchanged; `FileJournal` is stronger on disk (durable, crash-repairing, locked,
indexed). This package imports only the standard library, orjson and `devtool.core`.
"""

from __future__ import annotations

from devtool.journal.entries import CODE_TYPES, CONVERSATION_TYPES, KNOWN_TYPES, JournalEntry, JournalLevel
from devtool.journal.errors import (
    BadLineWarning,
    CheckpointWarning,
    JournalError,
    JournalWarning,
    MalformedEntryError,
    TornTailWarning,
    UnknownEntryError,
)
from devtool.journal.file import FileJournal
from devtool.journal.memory import InMemoryJournal
from devtool.journal.process_file import TailRepair
from devtool.journal.protocol import JournalProvider
from devtool.journal.recorder import Invocation, ProcessRecorder, apply_rewind
from devtool.journal.replay import ReplayEngine
from devtool.journal.rewind import RewindEngine, RewindMode, RewindPlan, RewindResult

__all__ = [
    "CODE_TYPES",
    "CONVERSATION_TYPES",
    "KNOWN_TYPES",
    "BadLineWarning",
    "CheckpointWarning",
    "FileJournal",
    "InMemoryJournal",
    "Invocation",
    "JournalEntry",
    "JournalError",
    "JournalLevel",
    "JournalProvider",
    "JournalWarning",
    "MalformedEntryError",
    "ProcessRecorder",
    "ReplayEngine",
    "RewindEngine",
    "RewindMode",
    "RewindPlan",
    "RewindResult",
    "TailRepair",
    "TornTailWarning",
    "UnknownEntryError",
    "apply_rewind",
]
