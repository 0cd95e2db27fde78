"""`FileJournal` on disk: the published layout, and stronger where that library was weak.

Each weakness measured on promptise 1.10.1 (corpus README) has a test here that would fail on it:
a torn or zero-filled last line swallowing the next append, bad lines stopping `read`, `limit=0`,
naive timestamps under `since`, a truncated checkpoint file silently dropping the state.
"""

from __future__ import annotations

import asyncio
import json
import warnings
from collections.abc import Callable, Coroutine
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import pytest

from devtool.journal import (
    BadLineWarning,
    CheckpointWarning,
    FileJournal,
    JournalEntry,
    JournalError,
    JournalWarning,
    ReplayEngine,
    TornTailWarning,
)

T = TypeVar("T")
PID = "proc"


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coroutine)


def entry(number: int, entry_type: str = "context_update", **data: Any) -> JournalEntry:
    return JournalEntry(
        entry_id=f"e{number:02d}",
        process_id=PID,
        timestamp=datetime(2026, 7, 16, 2, 0, number, tzinfo=UTC),
        entry_type=entry_type,
        data=data or {"key": f"k{number}", "value": number},
    )


def written(directory: Path, count: int) -> Path:
    """A journal of `count` entries written by `FileJournal`, closed again."""

    async def write() -> None:
        journal = FileJournal(directory)
        for number in range(count):
            await journal.append(entry(number))
        await journal.close()

    run(write())
    return directory / f"{PID}.jsonl"


def ids(directory: Path, **selection: Any) -> list[str]:
    return [e.entry_id for e in run(FileJournal(directory).read(PID, **selection))]


def quietly(call: Callable[[], T]) -> tuple[T, list[warnings.WarningMessage]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        return call(), caught


def test_layout_is_the_published_one(tmp_path: Path) -> None:
    path = written(tmp_path, 2)
    run(FileJournal(tmp_path).checkpoint(PID, {"context_state": {"a": 1}}))
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == [f"{PID}.checkpoint.json", f"{PID}.jsonl", f"{PID}.jsonl.idx"]
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line["entry_id"] for line in lines[:2]] == ["e00", "e01"]
    assert lines[0]["timestamp"] == "2026-07-16T02:00:00+00:00"
    assert lines[2]["entry_type"] == "checkpoint"
    assert lines[2]["data"] == {"state": {"context_state": {"a": 1}}}
    assert json.loads((tmp_path / f"{PID}.checkpoint.json").read_text()) == {"context_state": {"a": 1}}
    assert FileJournal(tmp_path).path_for(PID) == path


def test_unknown_types_are_kept_as_they_are(tmp_path: Path) -> None:
    journal = FileJournal(tmp_path)
    run(journal.append(entry(1, "heartbeat", beat=1)))
    run(journal.append(entry(2, "mission_evaluation", ok=True)))
    assert [(e.entry_type, e.data) for e in run(journal.read(PID))] == [
        ("heartbeat", {"beat": 1}),
        ("mission_evaluation", {"ok": True}),
    ]
    assert ids(tmp_path, entry_type="mission_evaluation") == ["e02"]


@pytest.mark.parametrize("tail", [b'{"entry_id": "torn", "process_id": "proc", "times', b"\x00" * 300])
def test_a_torn_or_zero_filled_tail_is_cut_on_open_and_the_next_append_reads_back(tmp_path: Path, tail: bytes) -> None:
    path = written(tmp_path, 3)
    with path.open("ab") as file:
        file.write(tail)
    journal = FileJournal(tmp_path)
    entries, caught = quietly(lambda: run(journal.read(PID)))
    assert [e.entry_id for e in entries] == ["e00", "e01", "e02"]
    assert [w.category for w in caught] == [TornTailWarning]
    assert f"{PID}.jsonl:4: cut off an unfinished last line of {len(tail)} bytes" in str(caught[0].message)
    assert [(r.removed, r.preview) for r in journal.repairs] == [(len(tail), tail[:80])]
    assert path.read_bytes().endswith(b"}\n")

    run(journal.append(entry(3)))
    after, caught = quietly(lambda: ids(tmp_path))
    assert after == ["e00", "e01", "e02", "e03"]
    assert caught == []


def test_a_reader_ignores_a_tail_it_did_not_open_with(tmp_path: Path) -> None:
    written(tmp_path, 2)
    journal = FileJournal(tmp_path)
    assert [e.entry_id for e in run(journal.read(PID))] == ["e00", "e01"]  # opened: repairs happen here
    path = tmp_path / f"{PID}.jsonl"
    with path.open("ab") as file:
        file.write(b'{"entry_id": "e02", "process_id": "proc", "timestamp": "2026-07-16T02:00:02+00:00", ')
    # Mid-write of another writer: not cut, not read, no warning; finished, it is read.
    assert quietly(lambda: [e.entry_id for e in run(journal.read(PID))]) == (["e00", "e01"], [])
    with path.open("ab") as file:
        file.write(b'"entry_type": "tool_call", "data": {}}\n')
    assert [e.entry_id for e in run(journal.read(PID))] == ["e00", "e01", "e02"]


def test_an_append_after_a_crash_never_glues_onto_the_torn_line(tmp_path: Path) -> None:
    path = written(tmp_path, 2)
    journal = FileJournal(tmp_path)
    assert [e.entry_id for e in run(journal.read(PID))] == ["e00", "e01"]  # the journal is open...
    with path.open("ab") as file:  # ...when a writer dies mid-line
        file.write(b'{"entry_id": "dead", "proc')
    _, caught = quietly(lambda: run(journal.append(entry(2))))
    assert [w.category for w in caught] == [TornTailWarning]
    assert path.read_bytes().splitlines()[-1].startswith(b'{"entry_id":"e02"')
    assert ids(tmp_path) == ["e00", "e01", "e02"]


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        (b"this is not json", "not JSON at column 1: “this is not json”"),
        (b"[1, 2, 3]", "not a JSON object but an array"),
        (b'{"entry_id": "x", "timestamp": "last tuesday", "entry_type": "error"}', "timestamp 'last tuesday' is not"),
        (b'{"entry_id": "x", "timestamp": null, "entry_type": "error"}', "timestamp is missing"),
        (b'{"entry_id": "x", "timestamp": "2026-07-16T02:00:00", "data": "\xff\xfe"}', "invalid UTF-8 at byte"),
        (
            b'{"entry_id": "x", "process_id": "someone-else", "timestamp": "2026-07-16T02:00:00"}',
            "belongs to process 'someone-else', not 'proc'",
        ),
    ],
)
def test_a_bad_line_in_the_middle_is_skipped_with_its_line_number(tmp_path: Path, bad: bytes, reason: str) -> None:
    path = written(tmp_path, 4)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join([*lines[:2], bad + b"\n", *lines[2:]]))
    (tmp_path / f"{PID}.jsonl.idx").unlink()

    entries, caught = quietly(lambda: run(FileJournal(tmp_path).read(PID)))
    assert [e.entry_id for e in entries] == ["e00", "e01", "e02", "e03"]
    assert len(caught) == 1
    assert caught[0].category is BadLineWarning
    assert (Path(caught[0].filename).name, caught[0].lineno) == (f"{PID}.jsonl", 3)
    assert f"{PID}.jsonl:3: {reason}" in str(caught[0].message)
    with pytest.warns(BadLineWarning, match=":3: "):  # every journal that opens the file says so
        recovered = run(ReplayEngine(FileJournal(tmp_path)).recover(PID))
    assert recovered["entries_replayed"] == 4
    assert recovered["context_state"] == {"k0": 0, "k1": 1, "k2": 2, "k3": 3}


def test_a_line_that_swallowed_a_torn_one_keeps_its_entry(tmp_path: Path) -> None:
    # What promptise leaves after a crash: its next append glued onto the unfinished line.
    path = written(tmp_path, 2)
    glued = b'{"entry_id": "lost", "process_id": "proc", "ti' + json.dumps(entry(2).to_dict()).encode() + b"\n"
    with path.open("ab") as file:
        file.write(glued)
    entries, caught = quietly(lambda: run(FileJournal(tmp_path).read(PID)))
    assert [e.entry_id for e in entries] == ["e00", "e01", "e02"]
    assert entries[2] == entry(2)
    assert [w.category for w in caught] == [BadLineWarning]
    assert ":3: starts with the unfinished tail of an earlier write" in str(caught[0].message)


def test_lines_another_writer_appended_are_read_by_an_open_journal(tmp_path: Path) -> None:
    written(tmp_path, 1)
    journal = FileJournal(tmp_path)
    assert [e.entry_id for e in run(journal.read(PID))] == ["e00"]
    foreign = json.dumps(entry(1).to_dict()) + "\n"  # the published library's spacing
    with (tmp_path / f"{PID}.jsonl").open("a") as file:
        file.write(foreign)
    assert [e.entry_id for e in run(journal.read(PID))] == ["e00", "e01"]
    run(journal.append(entry(2)))
    assert ids(tmp_path) == ["e00", "e01", "e02"]


def test_read_filters(tmp_path: Path) -> None:
    written(tmp_path, 6)
    assert ids(tmp_path, since=datetime(2026, 7, 16, 2, 0, 3, tzinfo=UTC)) == ["e03", "e04", "e05"]
    assert ids(tmp_path, since=datetime(2026, 7, 16, 2, 0, 4)) == ["e04", "e05"]  # naive since: UTC
    assert ids(tmp_path, limit=0) == []  # the published file journal returned one entry
    assert ids(tmp_path, limit=2) == ["e00", "e01"]
    assert ids(tmp_path, entry_type="context_update", limit=1) == ["e00"]
    assert ids(tmp_path, entry_type="checkpoint") == []
    assert run(FileJournal(tmp_path).read("nobody")) == []
    with pytest.raises(ValueError, match="limit must be 0 or more"):
        ids(tmp_path, limit=-1)


def test_a_checkpoint_replaces_the_file_atomically(tmp_path: Path) -> None:
    journal = FileJournal(tmp_path)
    for version in range(3):
        run(journal.checkpoint(PID, {"context_state": {"version": version}, "lifecycle_state": "running"}))
    assert run(journal.last_checkpoint(PID)) == {"context_state": {"version": 2}, "lifecycle_state": "running"}
    assert len(ids(tmp_path, entry_type="checkpoint")) == 3
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


@pytest.mark.parametrize("damage", ["truncated", "not an object", "missing"])
def test_an_unreadable_checkpoint_file_falls_back_to_the_last_checkpoint_entry(tmp_path: Path, damage: str) -> None:
    journal = FileJournal(tmp_path)
    run(journal.append(entry(0)))
    run(journal.checkpoint(PID, {"context_state": {"k0": 0, "saved": True}, "lifecycle_state": "suspended"}))
    run(journal.append(entry(1)))
    checkpoint_file = tmp_path / f"{PID}.checkpoint.json"
    if damage == "truncated":
        checkpoint_file.write_bytes(checkpoint_file.read_bytes()[:20])
    elif damage == "not an object":
        checkpoint_file.write_text("[1, 2]")
    else:
        checkpoint_file.unlink()

    recovered, caught = quietly(lambda: run(ReplayEngine(FileJournal(tmp_path)).recover(PID)))
    assert [w.category for w in caught] == [CheckpointWarning]
    # promptise 1.10.1 dropped the checkpoint here and answered "created" with only k0 and k1.
    assert recovered["lifecycle_state"] == "suspended"
    assert recovered["context_state"] == {"k0": 0, "saved": True, "k1": 1}
    assert recovered["entries_replayed"] == 1


def test_no_checkpoint_at_all_is_none(tmp_path: Path) -> None:
    written(tmp_path, 1)
    assert quietly(lambda: run(FileJournal(tmp_path).last_checkpoint(PID))) == (None, [])


def test_group_commit_makes_every_concurrent_append_durable(tmp_path: Path) -> None:
    async def scenario() -> None:
        journal = FileJournal(tmp_path, group_commit=True)
        await asyncio.gather(*(journal.append(entry(number)) for number in range(60)))
        await journal.close()

    run(scenario())
    assert sorted(ids(tmp_path)) == [f"e{number:02d}" for number in range(60)]
    # One line per entry, in whole lines: the batches were written as single writes.
    assert (tmp_path / f"{PID}.jsonl").read_bytes().count(b"\n") == 60


def test_a_journal_reopens_after_close(tmp_path: Path) -> None:
    journal = FileJournal(tmp_path)
    run(journal.append(entry(0)))
    run(journal.close())
    run(journal.append(entry(1)))
    assert [e.entry_id for e in run(journal.read(PID))] == ["e00", "e01"]


def test_an_empty_process_id_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    with pytest.raises(JournalError, match="process id must not be empty"):
        run(FileJournal(tmp_path).append(JournalEntry(entry_type="error")))
    assert list(tmp_path.iterdir()) == []


def test_warnings_are_journal_warnings() -> None:
    assert issubclass(TornTailWarning, JournalWarning)
    assert issubclass(BadLineWarning, JournalWarning)


def test_a_journal_cut_short_by_another_program_is_reindexed(tmp_path: Path) -> None:
    path = written(tmp_path, 4)
    journal = FileJournal(tmp_path)
    assert len(run(journal.read(PID))) == 4
    path.write_bytes(b"".join(path.read_bytes().splitlines(keepends=True)[:2]))
    with pytest.warns(JournalWarning, match="shorter than when it was last read"):
        assert [e.entry_id for e in run(journal.read(PID))] == ["e00", "e01"]
    run(journal.append(entry(9)))
    assert ids(tmp_path) == ["e00", "e01", "e09"]


def test_a_journal_deleted_while_open_is_not_appended_to_in_the_dark(tmp_path: Path) -> None:
    path = written(tmp_path, 2)
    journal = FileJournal(tmp_path)
    assert len(run(journal.read(PID))) == 2
    path.unlink()
    with pytest.warns(JournalWarning, match="deleted or replaced while open"):
        run(journal.append(entry(5)))
    assert ids(tmp_path) == ["e05"]  # written where a reader finds it
