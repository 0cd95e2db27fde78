"""`ReplayEngine.recover` beyond the oracle: checkpoints, strict lifecycle states, and after a rewind."""

from __future__ import annotations

import asyncio
from typing import Any

from devtool.journal import InMemoryJournal, JournalEntry, ReplayEngine

PID = "proc"


def recover(*events: tuple[str, dict[str, Any]], checkpoint_after: int | None = None) -> dict[str, Any]:
    async def scenario() -> dict[str, Any]:
        journal = InMemoryJournal()
        for number, (entry_type, data) in enumerate(events):
            await journal.append(JournalEntry(process_id=PID, entry_type=entry_type, data=data))
            if number == checkpoint_after:
                await journal.checkpoint(
                    PID, {"context_state": {"saved": number}, "lifecycle_state": "suspended", "mission": {"goal": 1}}
                )
        return await ReplayEngine(journal).recover(PID)

    return asyncio.run(scenario())


def test_nothing_recorded_is_a_created_process() -> None:
    assert recover() == {
        "context_state": {},
        "lifecycle_state": "created",
        "last_entry_type": "",
        "entries_replayed": 0,
        "mission": None,
        "checkpoint": {},
    }


def test_recovery_starts_at_the_last_checkpoint_and_replays_what_follows() -> None:
    recovered = recover(
        ("context_update", {"key": "before", "value": 1}),
        ("state_transition", {"to_state": "running"}),
        ("context_update", {"key": "after", "value": 2}),
        ("tool_call", {"tool": "t"}),
        checkpoint_after=1,
    )
    assert recovered["context_state"] == {"saved": 1, "after": 2}
    assert recovered["lifecycle_state"] == "suspended"
    assert (recovered["last_entry_type"], recovered["entries_replayed"]) == ("tool_call", 2)
    assert recovered["mission"] == {"goal": 1}
    assert recovered["checkpoint"]["context_state"] == {"saved": 1}


def test_a_lifecycle_state_is_always_a_non_empty_string() -> None:
    recovered = recover(
        ("state_transition", {"to_state": "running"}),
        ("state_transition", {"to_state": 7}),
        ("state_transition", {"to_state": ""}),
        ("state_transition", {}),
        ("context_update", {"key": 5, "value": "number keys change nothing"}),
        ("context_update", {"key": "", "value": "an empty key is a key"}),
        ("context_update", {"key": "no value"}),
    )
    assert recovered["lifecycle_state"] == "running"
    assert recovered["context_state"] == {"": "an empty key is a key", "no value": None}
    assert recovered["entries_replayed"] == 7


def test_earlier_rewind_entries_are_not_applied_without_their_checkpoint() -> None:
    # The published semantics, kept so journals move between the libraries: a rewind entry alone does
    # not change what recover answers; the checkpoint written right after it does (see ProcessRecorder).
    recovered = recover(
        ("context_update", {"key": "status", "value": "bad"}),
        ("rewind", {"target_entry_id": "x", "mode": "both"}),
    )
    assert recovered["context_state"] == {"status": "bad"}
