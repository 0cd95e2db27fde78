"""`RewindEngine` beyond the oracle: any provider, what is written when, errors, the five modes."""

from __future__ import annotations

import asyncio
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from devtool.journal import (
    FileJournal,
    InMemoryJournal,
    JournalEntry,
    JournalProvider,
    RewindEngine,
    RewindMode,
    UnknownEntryError,
)

PID = "proc"


class ThirdPartyJournal:
    """A provider written against the published protocol only (no `log()`): the engines must cope."""

    def __init__(self) -> None:
        self._inner = InMemoryJournal()

    async def append(self, entry: JournalEntry) -> None:
        await self._inner.append(entry)

    async def read(self, process_id: str, **selection: Any) -> list[JournalEntry]:
        return await self._inner.read(process_id, **selection)

    async def checkpoint(self, process_id: str, state: dict[str, Any]) -> None:
        await self._inner.checkpoint(process_id, state)

    async def last_checkpoint(self, process_id: str) -> dict[str, Any] | None:
        return await self._inner.last_checkpoint(process_id)

    async def close(self) -> None:
        await self._inner.close()


def history(seed: int) -> list[JournalEntry]:
    rng = random.Random(seed)
    types = ["context_update", "user_prompt", "assistant_message", "conversation_turn", "state_transition"]
    types += ["tool_call", "trigger_event", "checkpoint", "heartbeat", "invocation_result"]
    entries = []
    for number in range(60):
        entry_type = rng.choice(types)
        data: dict[str, Any] = {
            "key": f"k{rng.randrange(5)}",
            "value": number,
            "prompt": f"p{number}",
            "content": f"c{number}",
            "role": rng.choice(["user", "assistant", "tool"]),
            "to_state": rng.choice(["running", "suspended"]),
        }
        if entry_type == "checkpoint":
            data = {
                "state": {"context_state": {"restored": number}, "conversation": [{"role": "system", "content": "x"}]}
            }
        entries.append(
            JournalEntry(
                entry_id=f"h{number}",
                process_id=PID,
                timestamp=datetime(2026, 7, 16, tzinfo=UTC) + timedelta(seconds=number),
                entry_type=entry_type,
                data=data,
            )
        )
    return entries


async def answers(journal: JournalProvider, entries: list[JournalEntry], targets: list[str]) -> list[Any]:
    for entry in entries:
        await journal.append(entry)
    engine = RewindEngine(journal)
    out: list[Any] = []
    for target in targets:
        for mode in RewindMode:
            plan = await engine.plan(process_id=PID, target_entry_id=target, mode=mode)
            result = await engine.apply(process_id=PID, target_entry_id=target, mode=mode, record=False)
            out.append((plan.to_dict(), {**result.to_dict(), "applied_at": None}))
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_provider_gives_the_same_answers(tmp_path: Path, seed: int) -> None:
    entries = history(seed)
    targets = [entries[index].entry_id for index in (0, 1, 17, 30, 44, 59)]
    on_file = asyncio.run(answers(FileJournal(tmp_path), entries, targets))
    assert asyncio.run(answers(InMemoryJournal(), entries, targets)) == on_file
    assert asyncio.run(answers(ThirdPartyJournal(), entries, targets)) == on_file
    assert len(on_file) == 30


def billing(journal: JournalProvider) -> None:
    events = [
        ("e01", "state_transition", {"from_state": "created", "to_state": "running"}),
        ("e02", "context_update", {"key": "status", "value": "active"}),
        ("e03", "user_prompt", {"prompt": "reconcile"}),
        ("e04", "context_update", {"key": "status", "value": "delinquent"}),
        ("e05", "assistant_message", {"content": "holding"}),
        ("e06", "checkpoint", {"state": {"context_state": {"status": "delinquent"}, "lifecycle_state": "running"}}),
        ("e07", "tool_call", {"tool": "hold"}),
    ]

    async def write() -> None:
        for entry_id, entry_type, data in events:
            await journal.append(JournalEntry(entry_id=entry_id, process_id=PID, entry_type=entry_type, data=data))

    asyncio.run(write())


def test_modes_mix_the_state_before_and_now() -> None:
    journal = InMemoryJournal()
    billing(journal)
    engine = RewindEngine(journal)

    def apply(mode: str) -> Any:
        return asyncio.run(engine.apply(process_id=PID, target_entry_id="e04", mode=mode, record=False))

    both = apply("both")
    # The checkpoint after the target holds the whole state; it must not bring back what is rewound.
    assert (both.context_state, both.conversation) == ({"status": "active"}, [{"role": "user", "content": "reconcile"}])
    conversation_only = apply("conversation_only")
    assert conversation_only.context_state == {"status": "delinquent"}
    assert conversation_only.conversation == [{"role": "user", "content": "reconcile"}]
    code_only = apply("code_only")
    assert code_only.context_state == {"status": "active"}
    assert [m["content"] for m in code_only.conversation] == ["reconcile", "holding"]
    summarize = apply("summarize")
    assert summarize.context_state == {"status": "delinquent"}
    assert summarize.summary_note is not None
    assert summarize.summary_note.startswith("Skipped interval ")
    assert "containing 1 assistant_message, 1 checkpoint, 1 context_update, 1 tool_call." in summarize.summary_note
    assert summarize.conversation[-1] == {"role": "system", "content": f"[rewind summary] {summarize.summary_note}"}
    cancel = apply("cancel")
    assert (cancel.context_state, cancel.conversation, cancel.applied_at) == ({}, [], None)
    assert cancel.plan is not None
    assert cancel.plan.summary == "preview only: 4 entries affected (1 conversation, 2 code/state)."


def test_only_a_recorded_rewind_writes_and_it_writes_one_entry(tmp_path: Path) -> None:
    journal = FileJournal(tmp_path)
    billing(journal)
    engine = RewindEngine(journal)

    def lines() -> int:
        return (tmp_path / f"{PID}.jsonl").read_bytes().count(b"\n")

    asyncio.run(engine.apply(process_id=PID, target_entry_id="e04", mode=RewindMode.BOTH, record=False))
    asyncio.run(engine.apply(process_id=PID, target_entry_id="e04", mode=RewindMode.CANCEL, record=True))
    asyncio.run(engine.plan(process_id=PID, target_entry_id="e04", mode=RewindMode.BOTH))
    assert lines() == 7
    result = asyncio.run(engine.apply(process_id=PID, target_entry_id="e04", mode="code_only", actor="ana@acme"))
    assert lines() == 8
    last = asyncio.run(journal.read(PID))[-1]
    assert (last.entry_id, last.entry_type, last.timestamp) == (result.rewind_entry_id, "rewind", result.applied_at)
    assert last.data == {
        "target_entry_id": "e04",
        "mode": "code_only",
        "actor": "ana@acme",
        "entries_affected": 4,
        "conversation_affected": 1,
        "code_affected": 2,
        "summary_note": None,
    }
    # The rewind entry is itself a target, like any other.
    plan = asyncio.run(engine.plan(process_id=PID, target_entry_id=last.entry_id))
    assert plan.entries_affected == 1
    assert plan.target_entry_type == "rewind"


def test_an_unknown_target_or_mode_is_a_clear_error() -> None:
    journal = InMemoryJournal()
    billing(journal)
    engine = RewindEngine(journal)
    with pytest.raises(UnknownEntryError, match="target entry id 'e99' not found in journal of process 'proc'"):
        asyncio.run(engine.plan(process_id=PID, target_entry_id="e99"))
    with pytest.raises(ValueError, match="not found in journal of process 'other'"):
        asyncio.run(engine.apply(process_id="other", target_entry_id="e01", mode="both"))
    with pytest.raises(ValueError, match="'sideways' is not a valid RewindMode"):
        asyncio.run(engine.apply(process_id=PID, target_entry_id="e01", mode="sideways"))
