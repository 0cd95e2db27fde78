"""The sidecar index: its records, and that a wrong or damaged index is never believed over the journal."""

from __future__ import annotations

import asyncio
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from devtool.journal import FileJournal, JournalEntry, RewindEngine
from devtool.journal.index import (
    BLANK,
    CODE_OF,
    FOREIGN,
    HEADER,
    MALFORMED,
    NOT_AN_ENTRY,
    OTHER,
    RECORD_SIZE,
    SALVAGED,
    Columns,
    LineInfo,
    classify,
    id_crc,
)

PID = "proc"


def test_records_round_trip_column_by_column() -> None:
    columns = Columns()
    columns.add(10, LineInfo(0xDEADBEEF, 3, 0))
    columns.add(25, LineInfo(7, NOT_AN_ENTRY, MALFORMED))
    columns.add_written(25, [5, 2**33], [1, 2], bytes([OTHER, 1]))
    raw = columns.records(0)
    assert len(raw) == 4 * RECORD_SIZE
    again = Columns()
    again.add_records(raw)
    assert list(again.ends) == [10, 25, 30, 30 + 2**33]
    assert [again.info(line) for line in range(4)] == [
        LineInfo(0xDEADBEEF, 3, 0),
        LineInfo(7, NOT_AN_ENTRY, MALFORMED),
        LineInfo(1, OTHER, 0),
        LineInfo(2, 1, 0),
    ]
    assert columns.records(2) == raw[2 * RECORD_SIZE :]
    assert (again.start_of(0), again.start_of(2), again.end) == (0, 25, 30 + 2**33)


def test_how_lines_are_classified() -> None:
    good = b'{"entry_id": "a", "process_id": "proc", "timestamp": "2026-07-16T02:00:00Z", "entry_type": "tool_call"}'
    assert classify(good, PID) == LineInfo(id_crc("a"), CODE_OF["tool_call"], 0)
    assert classify(good.replace(b"tool_call", b"heartbeat"), PID).code == OTHER
    assert classify(b"   ", PID).flags == BLANK
    assert classify(b"{nope", PID).flags == MALFORMED
    assert classify(good.replace(b'"proc"', b'"other"'), PID).flags == FOREIGN
    assert classify(good.replace(b'"proc"', b'""'), PID).code == CODE_OF["tool_call"]  # no owner: ours
    assert classify(b'{"entry_id": "tor' + good, PID) == LineInfo(id_crc("a"), CODE_OF["tool_call"], SALVAGED)


def make_journal(directory: Path, types: list[str], prefix: str = "e") -> None:
    async def write() -> None:
        journal = FileJournal(directory)
        for number, entry_type in enumerate(types):
            await journal.append(
                JournalEntry(
                    entry_id=f"{prefix}{number}",
                    process_id=PID,
                    timestamp=datetime(2026, 7, 16, 2, 0, number, tzinfo=UTC),
                    entry_type=entry_type,
                )
            )
        await journal.close()

    asyncio.run(write())


def answers(directory: Path, target: str) -> tuple[list[str], str]:
    async def ask() -> tuple[list[str], str]:
        journal = FileJournal(directory)
        entries = await journal.read(PID)
        plan = await RewindEngine(journal).plan(process_id=PID, target_entry_id=target)
        return [f"{e.entry_id}:{e.entry_type}" for e in entries], plan.summary

    return asyncio.run(ask())


FIRST = ["tool_call"] * 4
SECOND = ["heartbeat"] * 4  # the same length as "tool_call": a stale index would look plausible
EXPECTED = (
    ["f0:heartbeat", "f1:heartbeat", "f2:heartbeat", "f3:heartbeat"],
    "preview only: 3 entries affected (0 conversation, 0 code/state).",
)


def second_journal_bytes(tmp_path: Path) -> bytes:
    other = tmp_path / "other"
    make_journal(other, SECOND, prefix="f")
    return (other / f"{PID}.jsonl").read_bytes()


def test_an_index_of_a_replaced_journal_is_rebuilt(tmp_path: Path) -> None:
    make_journal(tmp_path, FIRST)
    journal = tmp_path / f"{PID}.jsonl"
    replacement = tmp_path / "replacement"
    replacement.write_bytes(second_journal_bytes(tmp_path))
    assert replacement.stat().st_size == journal.stat().st_size
    os.replace(replacement, journal)  # a new file (new inode) under the old name; the old index stays
    assert answers(tmp_path, "f1") == EXPECTED


def test_an_index_whose_last_record_does_not_match_its_line_is_rebuilt(tmp_path: Path) -> None:
    make_journal(tmp_path, FIRST)
    journal = tmp_path / f"{PID}.jsonl"
    content = second_journal_bytes(tmp_path)
    with journal.open("r+b") as file:  # rewritten in place: same inode, same length
        file.write(content)
    assert journal.read_bytes() == content
    assert answers(tmp_path, "f1") == EXPECTED


@pytest.mark.parametrize(
    "damage",
    ["garbage", "half a record", "empty", "missing", "header only"],
)
def test_a_damaged_index_never_changes_an_answer(tmp_path: Path, damage: str) -> None:
    make_journal(tmp_path, SECOND, prefix="f")
    index = tmp_path / f"{PID}.jsonl.idx"
    raw = index.read_bytes()
    if damage == "garbage":
        index.write_bytes(os.urandom(len(raw)))
    elif damage == "half a record":
        index.write_bytes(raw[: HEADER.size + 2 * RECORD_SIZE + 7])
    elif damage == "empty":
        index.write_bytes(b"")
    elif damage == "missing":
        index.unlink()
    else:
        index.write_bytes(raw[: HEADER.size])
    assert answers(tmp_path, "f1") == EXPECTED
    assert index.stat().st_size == HEADER.size + 4 * RECORD_SIZE  # and it is whole again


def test_an_index_ahead_of_a_shortened_journal_is_rebuilt(tmp_path: Path) -> None:
    make_journal(tmp_path, SECOND, prefix="f")
    journal = tmp_path / f"{PID}.jsonl"
    journal.write_bytes(b"".join(journal.read_bytes().splitlines(keepends=True)[:2]))
    assert answers(tmp_path, "f1") == (
        EXPECTED[0][:2],
        "preview only: 1 entry affected (0 conversation, 0 code/state).",
    )
