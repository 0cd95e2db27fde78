"""A journal file under crashes and concurrent writers: real child processes, real SIGKILLs.

The child is `tests/journal_writer.py`: it appends as fast as it can and prints each entry id once
its append has returned (so the parent knows exactly which appends were acknowledged).

What a SIGKILL can and cannot show: it stops the writer at any instruction (mid-`write`, between the
journal line and its index record, mid-index-record), so it tests repair, the index rules and that no
acknowledged entry is lost from the file. It cannot show that appends are fsync'd (the kernel still
has the written pages); only a power cut would, and no test here can make one.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import random
import signal
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path
from typing import IO

import pytest

from devtool.journal import (
    FileJournal,
    InMemoryJournal,
    JournalEntry,
    JournalWarning,
    ReplayEngine,
    RewindEngine,
    TornTailWarning,
)
from testkit.checkout import child_env
from tests.journal_writer import expected_data

WRITER = Path(__file__).with_name("journal_writer.py")


class Child:
    """A running writer; a thread drains its stdout so it never blocks on a full pipe."""

    def __init__(self, directory: Path, process_id: str, tag: str, count: int, mode: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(WRITER), str(directory), process_id, tag, str(count), mode],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=child_env(),
        )
        assert self.process.stdout is not None
        assert self.process.stdout.readline() == "ready\n", self.process.stderr.read() if self.process.stderr else ""
        self.acknowledged: list[str] = []
        self._reader = threading.Thread(target=self._read, args=(self.process.stdout,), daemon=True)
        self._reader.start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            if line.endswith("\n"):  # an id cut by the kill was never fully reported
                self.acknowledged.append(line[:-1])

    def wait_for_first_append(self) -> None:
        deadline = time.monotonic() + 30
        while not self.acknowledged and time.monotonic() < deadline:
            time.sleep(0.001)
        assert self.acknowledged, "no append returned within 30 s"

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)
        self._reader.join(timeout=30)
        assert self.process.returncode == -signal.SIGKILL

    def wait(self) -> None:
        assert self.process.wait(timeout=120) == 0, self.process.stderr.read() if self.process.stderr else ""
        self._reader.join(timeout=30)


def read_back(directory: Path, process_id: str) -> tuple[list[JournalEntry], list[warnings.WarningMessage]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        entries = asyncio.run(FileJournal(directory).read(process_id))
    return entries, caught


def assert_whole_entries(entries: list[JournalEntry]) -> None:
    """Every entry is one the writers meant to write, byte for byte, and none is there twice."""
    ids = [entry.entry_id for entry in entries]
    assert len(ids) == len(set(ids))
    for entry in entries:
        tag, index = entry.entry_id.rsplit("-", 1)
        assert entry.data == expected_data(tag, int(index)), entry.entry_id


@pytest.mark.slow
def test_sigkill_at_random_moments_loses_no_acknowledged_append(tmp_path: Path) -> None:
    rng = random.Random(20260716)
    for iteration in range(30):
        # Five kills in a row on the same file, so each reopen repairs what the last kill left.
        directory = tmp_path / f"round-{iteration // 5}"
        child = Child(directory, "crash", f"k{iteration}", 0, "group" if iteration % 2 else "durable")
        child.wait_for_first_append()  # so that every kill has acknowledged appends to check
        time.sleep(rng.uniform(0, 0.3))
        child.kill()

        entries, caught = read_back(directory, "crash")
        problems = [w for w in caught if issubclass(w.category, JournalWarning) and w.category is not TornTailWarning]
        assert problems == []
        assert_whole_entries(entries)
        stored = {entry.entry_id for entry in entries}
        acknowledged = set(child.acknowledged)
        assert acknowledged <= stored

        after = JournalEntry(
            entry_id=f"after-{iteration}",
            process_id="crash",
            entry_type="context_update",
            data=expected_data("after", iteration),
        )
        asyncio.run(FileJournal(directory).append(after))
        again, caught = read_back(directory, "crash")
        assert [w for w in caught if issubclass(w.category, JournalWarning)] == []
        assert again[: len(entries)] == entries
        assert again[-1] == after
        assert_index_agrees_with_the_lines(directory, "crash", again)


@pytest.mark.slow
def test_a_kill_in_the_middle_of_a_write_is_cut_off_on_the_next_open(tmp_path: Path) -> None:
    """Random kills rarely land inside a `write`; this one waits until the file shows half a line."""
    path = tmp_path / "huge.jsonl"
    torn = 0
    for attempt in range(6):
        before = path.stat().st_size if path.exists() else 0
        child = Child(tmp_path, "huge", f"h{attempt}", 1, "huge")
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not half_a_line(path, before):
            time.sleep(0.0002)
        child.kill()
        if not half_a_line(path, before):
            continue  # the write finished first: try again
        assert child.acknowledged == []
        entries, caught = read_back(tmp_path, "huge")
        assert [w.category for w in caught] == [TornTailWarning]
        assert path.stat().st_size == before
        assert f"h{attempt}-0" not in {entry.entry_id for entry in entries}
        assert all(entry.data == expected_data(entry.entry_id[:-2], 0, huge=True) for entry in entries)
        torn += 1
        if torn == 2:
            break
    assert torn == 2
    after = JournalEntry(entry_id="after", process_id="huge", entry_type="tool_call", data=expected_data("after", 1))
    asyncio.run(FileJournal(tmp_path).append(after))
    assert read_back(tmp_path, "huge")[0][-1] == after


def half_a_line(path: Path, size_before: int) -> bool:
    """The file has grown and does not end with a newline: a `write` is under way."""
    try:
        with path.open("rb") as file:
            size = file.seek(0, os.SEEK_END)
            if size <= size_before:
                return False
            file.seek(size - 1)
            return file.read(1) != b"\n"
    except FileNotFoundError:
        return False


def assert_index_agrees_with_the_lines(directory: Path, process_id: str, entries: list[JournalEntry]) -> None:
    """The engines answer from the sidecar index exactly what they answer from the entries themselves."""
    memory = InMemoryJournal()

    async def compare() -> None:
        for entry in entries:
            await memory.append(entry)
        on_disk = FileJournal(directory)
        assert await ReplayEngine(on_disk).recover(process_id) == await ReplayEngine(memory).recover(process_id)
        target = entries[len(entries) // 2].entry_id
        for journal in (on_disk, memory):
            plan = await RewindEngine(journal).plan(process_id=process_id, target_entry_id=target)
            assert plan.entries_total == len(entries)
            assert plan.entries_affected == len(entries) - len(entries) // 2

    asyncio.run(compare())


@pytest.mark.parametrize("mode", ["durable", "group"])
def test_two_processes_appending_at_once_never_interleave(tmp_path: Path, mode: str) -> None:
    count = 300 if mode == "durable" else 1500
    children = [Child(tmp_path, "shared", tag, count, mode) for tag in ("left", "right")]
    for child in children:
        child.wait()

    raw = (tmp_path / "shared.jsonl").read_bytes()
    assert raw.endswith(b"\n")
    entries, caught = read_back(tmp_path, "shared")
    assert [w for w in caught if issubclass(w.category, JournalWarning)] == []
    assert len(entries) == raw.count(b"\n") == 2 * count
    assert_whole_entries(entries)
    for child in children:
        tag = child.acknowledged[0].rsplit("-", 1)[0]
        mine = [entry.entry_id for entry in entries if entry.entry_id.startswith(f"{tag}-")]
        assert sorted(mine) == sorted(child.acknowledged)
        if mode == "durable":  # one task: its entries are in the order it appended them
            assert mine == child.acknowledged
    assert_index_agrees_with_the_lines(tmp_path, "shared", entries)


def test_a_writer_holding_the_lock_makes_another_process_wait(tmp_path: Path) -> None:
    journal = FileJournal(tmp_path)
    asyncio.run(journal.append(JournalEntry(process_id="locked", entry_type="context_update")))
    fd = os.open(tmp_path / "locked.jsonl", os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        child = Child(tmp_path, "locked", "blocked", 1, "durable")
        time.sleep(0.5)
        assert child.acknowledged == []  # its append waits for the lock
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
    child.wait()
    assert child.acknowledged == ["blocked-0"]
    assert [e.entry_id for e in read_back(tmp_path, "locked")[0]][-1] == "blocked-0"


def test_an_open_journal_sees_what_another_process_appended(tmp_path: Path) -> None:
    child = Child(tmp_path, "shared", "other", 200, "group")
    child.wait()
    journal = FileJournal(tmp_path)
    entries = asyncio.run(journal.read("shared"))
    assert len(entries) == 200
    index = tmp_path / "shared.jsonl.idx"
    assert index.stat().st_size == 32 + 16 * 200

    child = Child(tmp_path, "shared", "more", 50, "durable")
    child.wait()
    # The open journal sees the other process's appends (from its index records) without reopening.
    ids = [entry.entry_id for entry in asyncio.run(journal.read("shared"))]
    assert ids[200:] == [f"more-{i}" for i in range(50)]
