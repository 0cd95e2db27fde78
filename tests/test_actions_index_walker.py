"""`walk_apart`: the rewind index's walk in a child process hands over what the walk in this process
would, at a lower priority, and every way it can end (refused, a failed read, a failed sink, a dead
child) ends it with the reason and leaves no process behind."""

from __future__ import annotations

import os
import signal
from collections.abc import Generator
from pathlib import Path

import orjson
import pytest

from bench.gen_trace import generate
from devtool.actions.index_walker import NICENESS, Chunk, IndexWalkError, walk_apart
from devtool.core.frame_index import index_stream
from devtool.core.frame_index_records import Batch, NotIndexable
from devtool.core.restore import IGNORED_TYPES
from devtool.store.errors import StoreError


def chunks_of(lines: list[bytes], size: int = 700) -> Generator[Chunk, None, None]:
    """A run's events as the store reads them for the index: `(event_id, JSON text)` chunks."""
    rows = [(event_id, line.decode()) for event_id, line in enumerate(lines, start=1)]
    for start in range(0, len(rows), size):
        yield rows[start : start + size]


def run_lines(tmp_path: Path, events: int = 20_000, seed: int = 3) -> list[bytes]:
    generated = generate(tmp_path / "run.jsonl", events=events, seed=seed)
    lines = generated.path.read_bytes().splitlines()
    return [line for line in lines if orjson.loads(line)["type"] not in IGNORED_TYPES]


def children() -> list[int]:
    """This process's child processes, now."""
    found: list[int] = []
    for task in Path("/proc/self/task").iterdir():
        try:
            found += [int(pid) for pid in (task / "children").read_text().split()]
        except FileNotFoundError:
            continue  # a thread that ended meanwhile (the walk's feeder, say)
    return found


def walkers() -> list[int]:
    """The children of this process that are index walks (others may come and go meanwhile)."""
    found = []
    for pid in children():
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"devtool.actions.index_walker" in command:
            found.append(pid)
    return found


def test_the_child_hands_over_the_batches_the_walk_here_would(tmp_path: Path) -> None:
    lines = run_lines(tmp_path)
    here: list[Batch] = []
    events_here = index_stream(
        ((event_id, orjson.loads(body)) for chunk in chunks_of(lines) for event_id, body in chunk), here.append
    )
    apart: list[Batch] = []
    assert walk_apart(chunks_of(lines), apart.append) == events_here == len(lines)
    assert len(apart) == len(here) > 1
    assert apart == here  # frames, chunks, nodes and counts, batch by batch
    assert walkers() == []


def test_the_child_runs_at_a_lower_priority_while_it_walks(tmp_path: Path) -> None:
    seen: list[tuple[int, int]] = []

    def sink(batch: Batch) -> None:
        seen.extend((pid, os.getpriority(os.PRIO_PROCESS, pid)) for pid in walkers())

    walk_apart(chunks_of(run_lines(tmp_path)), sink)
    assert seen
    ours = os.getpriority(os.PRIO_PROCESS, 0)
    assert {nice for _, nice in seen} == {min(ours + NICENESS, 19)}
    assert len({pid for pid, _ in seen}) == 1


def test_a_run_the_walk_refuses_is_not_indexable_with_its_reason(tmp_path: Path) -> None:
    lines = run_lines(tmp_path)
    late = orjson.loads(lines[10])
    late["timestamp"] = 0  # earlier than every event before it
    lines[10] = orjson.dumps(late)
    with pytest.raises(NotIndexable, match="event 11 is earlier than the last"):
        walk_apart(chunks_of(lines), lambda batch: None)
    assert walkers() == []


def test_a_read_that_fails_midway_is_raised_and_the_child_ends(tmp_path: Path) -> None:
    lines = run_lines(tmp_path)

    def failing() -> Generator[Chunk, None, None]:
        chunks = chunks_of(lines)
        yield next(chunks)
        raise StoreError("the store could not be read at event 701")

    with pytest.raises(StoreError, match="at event 701"):
        walk_apart(failing(), lambda batch: None)
    assert walkers() == []


def test_a_sink_that_fails_stops_the_walk_and_its_error_is_raised(tmp_path: Path) -> None:
    handed: list[Batch] = []

    def sink(batch: Batch) -> None:
        handed.append(batch)
        raise StoreError("the disk is full")

    with pytest.raises(StoreError, match="the disk is full"):
        walk_apart(chunks_of(run_lines(tmp_path)), sink)
    assert len(handed) == 1
    assert walkers() == []


def test_a_child_that_dies_midway_is_an_error_that_says_so(tmp_path: Path) -> None:
    def sink(batch: Batch) -> None:
        for pid in walkers():
            os.kill(pid, signal.SIGKILL)

    with pytest.raises(IndexWalkError, match=r"without an answer \(exit code -9\)"):
        walk_apart(chunks_of(run_lines(tmp_path)), sink)
    assert walkers() == []


def test_a_failure_in_the_child_comes_back_with_its_traceback(tmp_path: Path) -> None:
    lines = run_lines(tmp_path)
    lines[5] = b'{"type": "agent:start", "truncated'

    with pytest.raises(IndexWalkError, match=r"(?s)walk failed:.*Traceback.*JSONDecodeError"):
        walk_apart(chunks_of(lines), lambda batch: None)
    assert walkers() == []
