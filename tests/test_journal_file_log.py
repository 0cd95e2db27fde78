"""`FileLog` answers from the index exactly what `ListLog` answers from the entries themselves.

The engines run on either; these tests build one messy journal (every known type, unknown types,
repeated ids, ids whose CRC-32 collide, blank, bad and salvaged lines) and compare every question.
"""

from __future__ import annotations

import asyncio
import functools
import random
import warnings
import zlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from devtool.journal import KNOWN_TYPES, FileJournal, JournalEntry
from devtool.journal.file_log import FileLog
from devtool.journal.log import ListLog
from devtool.journal.state import STATE_TYPES

PID = "messy"
TYPES = [*KNOWN_TYPES, "heartbeat", "recovered", "mission_evaluation"]


@functools.cache
def colliding_ids() -> tuple[str, str]:
    """Two different ids with the same CRC-32 (the birthday bound makes this quick)."""
    rng = random.Random(7)
    seen: dict[int, str] = {}
    for _ in range(1_000_000):
        candidate = f"id-{rng.getrandbits(64):016x}"
        crc = zlib.crc32(candidate.encode())
        if crc in seen:
            return seen[crc], candidate
        seen[crc] = candidate
    raise AssertionError("no collision found")


def messy_journal(directory: Path) -> list[JournalEntry]:
    rng = random.Random(99)
    first, second = colliding_ids()
    entries: list[JournalEntry] = []
    for number in range(400):
        entry_type = rng.choice(TYPES)
        entry_id = {50: first, 51: second, 300: "e10", 301: ""}.get(number, f"e{number}")
        data = {"key": f"k{rng.randrange(8)}", "value": number, "to_state": rng.choice(["running", "stopped", 3])}
        if entry_type == "checkpoint":
            data = {"state": {"context_state": {"from": number}, "conversation": [{"role": "user", "content": "hi"}]}}
        entries.append(
            JournalEntry(
                entry_id=entry_id or "",
                process_id=PID,
                timestamp=datetime(2026, 7, 16, tzinfo=UTC) + timedelta(seconds=number),
                entry_type=entry_type,
                data=data,
            )
        )

    async def write() -> None:
        journal = FileJournal(directory)
        for entry in entries:
            await journal.append(entry)
        await journal.close()

    asyncio.run(write())
    path = directory / f"{PID}.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    torn = b'{"entry_id": "half", "process_id": "messy", "time'
    lines[120:120] = [b"\n", b"not json at all\n", b"[1]\n", b"   \n"]
    lines[200] = torn + lines[200]  # glued onto a torn line: salvaged
    path.write_bytes(b"".join(lines))
    return entries


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> tuple[FileLog, ListLog, list[int]]:
    directory = tmp_path_factory.mktemp("messy")
    messy_journal(directory)
    journal = FileJournal(directory)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        file_log = asyncio.run(journal.log(PID, with_checkpoint=True))
        entries = asyncio.run(journal.read(PID))
    assert isinstance(file_log, FileLog)
    assert len(entries) == 400
    positions = [position for position in range(file_log.end) if file_log._codes[position]]
    return file_log, ListLog(entries, file_log.checkpoint), positions


def test_every_entry_is_at_its_position(logs: tuple[FileLog, ListLog, list[int]]) -> None:
    file_log, list_log, positions = logs
    assert len(positions) == list_log.end == 400
    assert file_log.end == 404  # blank and bad lines hold positions, not entries
    assert [file_log.entry(p) for p in positions] == [list_log.entry(i) for i in range(400)]
    assert list(file_log.entries()) == list(list_log.entries())


def test_counts_from_every_position_agree(logs: tuple[FileLog, ListLog, list[int]]) -> None:
    file_log, list_log, positions = logs
    type_sets: list[frozenset[str] | None] = [
        None,
        frozenset({"user_prompt", "trigger_event"}),
        frozenset({"heartbeat", "checkpoint"}),
        frozenset({"never-written"}),
    ]
    for index in range(0, 400, 7):
        for types in type_sets:
            assert file_log.count(positions[index], types) == list_log.count(index, types)
        assert file_log.type_counts(positions[index]) == list_log.type_counts(index)
        assert file_log.last_from(positions[index]) == list_log.last_from(index)


def test_finding_ids_agrees_even_for_repeated_and_colliding_ids(logs: tuple[FileLog, ListLog, list[int]]) -> None:
    file_log, list_log, positions = logs
    first, second = colliding_ids()
    for entry in list_log.entries():
        found = list_log.find(entry.entry_id)
        assert found is not None
        assert file_log.find(entry.entry_id) == positions[found]
    assert list_log.find("e10") == 10  # repeated at 300: the first one wins
    assert file_log.entry(file_log.find(second) or 0).entry_id == second
    assert zlib.crc32(first.encode()) == zlib.crc32(second.encode())
    assert file_log.find("nowhere") is None
    assert list_log.find("nowhere") is None


def test_scans_and_last_positions_agree(logs: tuple[FileLog, ListLog, list[int]]) -> None:
    file_log, list_log, positions = logs
    for types in (STATE_TYPES, frozenset({"heartbeat", "context_update"})):
        ours = [(t, d) for _, t, d in file_log.scan(types, positions[30], positions[390])]
        theirs = [(t, d) for _, t, d in list_log.scan(types, 30, 390)]
        assert ours == theirs
        assert ours
    for entry_type in ("checkpoint", "heartbeat", "rewind", "never-written"):
        ours_at = file_log.last_of(entry_type)
        theirs_at = list_log.last_of(entry_type)
        assert (ours_at is None) == (theirs_at is None)
        if theirs_at is not None:
            assert ours_at == positions[theirs_at]
