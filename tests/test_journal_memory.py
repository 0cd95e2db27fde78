"""`InMemoryJournal`: the same answers as the file journal, and an append-only history nobody can edit."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from devtool.journal import FileJournal, InMemoryJournal, JournalEntry


def test_neither_the_appended_nor_a_read_entry_can_edit_the_journal() -> None:
    async def scenario() -> list[dict[str, Any]]:
        journal = InMemoryJournal()
        data: dict[str, Any] = {"key": "status", "value": {"level": 1}}
        await journal.append(JournalEntry(entry_id="e1", process_id="p", entry_type="context_update", data=data))
        data["value"]["level"] = 2
        (read,) = await journal.read("p")
        read.data["value"]["level"] = 3
        state = {"context_state": {"a": 1}}
        await journal.checkpoint("p", state)
        state["context_state"]["a"] = 2
        checkpoint = await journal.last_checkpoint("p")
        assert checkpoint == {"context_state": {"a": 1}}
        checkpoint["context_state"]["a"] = 4
        assert await journal.last_checkpoint("p") == {"context_state": {"a": 1}}
        return [entry.data for entry in await journal.read("p")]

    assert asyncio.run(scenario()) == [
        {"key": "status", "value": {"level": 1}},
        {"state": {"context_state": {"a": 1}}},
    ]


def test_processes_are_kept_apart_and_filters_match_the_file_journal(tmp_path: Path) -> None:
    entries = [
        JournalEntry(
            entry_id=f"e{n}",
            process_id="p" if n % 2 else "q",
            timestamp=datetime(2026, 7, 16, 2, 0, n),  # naive: UTC
            entry_type="tool_call" if n % 3 else "context_update",
            data={"n": n, "when": datetime(2026, 1, 1, tzinfo=UTC), "pair": (n, n)},
        )
        for n in range(12)
    ]

    async def answers(journal: Any) -> list[list[tuple[str, dict[str, Any]]]]:
        for entry in entries:
            await journal.append(entry)
        selections: list[dict[str, Any]] = [
            {},
            {"entry_type": "tool_call"},
            {"since": datetime(2026, 7, 16, 2, 0, 5)},
            {"limit": 2},
            {"limit": 0},
        ]
        return [
            [(e.entry_id, e.data) for e in await journal.read(pid, **selection)]
            for pid in ("p", "q", "nobody")
            for selection in selections
        ]

    in_memory = asyncio.run(answers(InMemoryJournal()))
    assert in_memory == asyncio.run(answers(FileJournal(tmp_path)))
    assert in_memory[0][0] == ("e1", {"n": 1, "when": "2026-01-01T00:00:00+00:00", "pair": [1, 1]})
    assert [len(answer) for answer in in_memory[:5]] == [6, 4, 4, 2, 0]
