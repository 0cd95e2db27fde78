"""Following a trace file: partial lines, bad lines, truncation, rotation, and no double store on restart."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import orjson
import pytest

from devtool.store import Store, load_file
from devtool.store.queries import events_after, get_run
from devtool.web.live import Appender, Broker, follow
from devtool.web.live.follow import Follower, TailReader
from tests.conftest import DevtoolRunner, Trace


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def line(event: dict[str, Any]) -> bytes:
    return orjson.dumps(event) + b"\n"


def events_of(found: follow.Lines) -> list[dict[str, Any]]:
    """The TraceEvents a read found (each passed the store's gate)."""
    return [checked.event for checked in found.events]


def write(path: Path, data: bytes) -> None:
    with path.open("ab") as handle:
        handle.write(data)


def run_events(count: int) -> list[dict[str, Any]]:
    t = Trace()
    root = t.start("agent")
    while len(t.events) < count - 1:
        t.end(t.start("turn", root))
    t.end(root)
    return t.events[:count]


def test_a_half_written_line_waits_for_its_end(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    first, second = run_events(2)
    text = line(first) + line(second)
    cut = len(line(first)) + 10
    write(path, text[:cut])
    reader = TailReader(path)
    assert events_of(reader.read()) == [first]
    assert events_of(reader.read()) == []
    write(path, text[cut:-1])
    assert events_of(reader.read()) == []  # everything but the newline: still not a line
    write(path, b"\n")
    assert events_of(reader.read()) == [second]


def test_bad_lines_are_named_and_skipped_blank_lines_crlf_and_a_bom_are_fine(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    events = run_events(3)
    path.write_bytes(
        b"\xef\xbb\xbf"
        + line(events[0])
        + b"\n{not json\n"
        + orjson.dumps(events[1])
        + b"\r\n"
        + b'{"type": "agent:start"}\n'
        + line(events[2])
    )
    found = TailReader(path).read()
    assert events_of(found) == events
    assert found.problems[0][0] == 3
    assert found.problems[0][1].startswith("not JSON at column 2: ")
    assert found.problems[1] == (5, 'no "timestamp"')


def test_a_file_that_does_not_exist_yet_is_waited_for(tmp_path: Path) -> None:
    path = tmp_path / "later.jsonl"
    reader = TailReader(path)
    assert events_of(reader.read()) == []
    events = run_events(2)
    path.write_bytes(line(events[0]) + line(events[1]))
    assert events_of(reader.read()) == events


def test_a_truncated_file_is_read_again_from_its_start(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    old, new = run_events(4), run_events(2)
    path.write_bytes(b"".join(line(e) for e in old))
    reader = TailReader(path)
    assert events_of(reader.read()) == old
    with path.open("r+b") as handle:  # copytruncate: the same file, emptied and written again
        handle.truncate(0)
        handle.write(line(new[0]))
    assert events_of(reader.read()) == [new[0]]
    assert reader.restarts == 1
    write(path, line(new[1]))
    assert events_of(reader.read()) == [new[1]]


def test_a_rotated_file_is_read_to_its_end_then_the_new_file_from_its_start(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    events = run_events(5)
    path.write_bytes(line(events[0]))
    reader = TailReader(path)
    assert events_of(reader.read()) == [events[0]]
    write(path, line(events[1]) + line(events[2]))  # written before the rotation, not read yet
    path.rename(tmp_path / "trace.jsonl.1")
    path.write_bytes(line(events[3]))
    assert events_of(reader.read()) == events[1:3]
    assert events_of(reader.read()) == [events[3]]
    assert reader.restarts == 1
    write(path, line(events[4]))
    assert events_of(reader.read()) == [events[4]]


def test_an_unfinished_last_line_of_a_rotated_file_is_kept_only_if_it_is_whole(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    events = run_events(3)
    path.write_bytes(line(events[0]) + orjson.dumps(events[1]))
    reader = TailReader(path)
    assert events_of(reader.read()) == [events[0]]
    os.replace(path, tmp_path / "old.jsonl")
    assert events_of(reader.read()) == [events[1]]  # whole JSON, only its newline missing
    path.write_bytes(line(events[2])[:20])
    assert events_of(reader.read()) == []
    path.unlink()
    found = reader.read()
    assert (events_of(found), found.problems) == ([], [(1, "the last line was left unfinished")])


def test_a_line_too_long_is_skipped_once_and_what_follows_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(follow, "READ_CHUNK", 64)
    monkeypatch.setattr(follow, "MAX_LINE", 400)
    path = tmp_path / "trace.jsonl"
    events = run_events(2)
    path.write_bytes(line(events[0]) + b'{"pad": "' + b"x" * 1000 + b'"}\n' + line(events[1]))
    reader = TailReader(path)
    found: list[dict[str, Any]] = []
    problems: list[tuple[int, str]] = []
    for _ in range(40):
        read = reader.read()
        found += events_of(read)
        problems += read.problems
    assert found == events
    assert problems == [(2, "a line longer than 400 bytes")]


# The follower, into a real store


def follower(store: Store, path: Path) -> tuple[Follower, Broker]:
    broker = Broker()
    return Follower(path, store, Appender(store, broker)), broker


@pytest.mark.anyio
async def test_followed_events_are_stored_and_published(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    events = run_events(6)
    path.write_bytes(b"".join(line(e) for e in events[:4]))
    tail, broker = follower(store, path)
    with broker.subscription(events[0]["trace"]["traceId"]) as subscription:
        assert await tail.step() is True
        write(path, line(events[4]) + line(events[5])[:-1])
        await tail.step()
        assert [e.event_id for e in subscription.take()] == [1, 2, 3, 4, 5]
        write(path, b"\n")
        await tail.step()
        assert [e.event_id for e in subscription.take()] == [6]
    assert await tail.step() is False
    assert [e.event for e in events_after(store, 0)] == events
    await tail.appender.settle()  # spans follow the events: what a page request waits for
    assert get_run(store, events[0]["trace"]["traceId"]).status == "completed"
    assert store.query("SELECT kind, path, events FROM sources") == [("live", str(path.resolve()), 6)]


@pytest.mark.anyio
async def test_following_a_file_again_stores_only_what_is_new(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    events = run_events(8)
    path.write_bytes(b"".join(line(e) for e in events[:5]))
    first, _ = follower(store, path)
    await first.step()
    write(path, line(events[5]))
    again, _ = follower(store, path)  # the server restarted
    await again.step()
    write(path, line(events[6]) + line(events[7]))
    await again.step()
    assert [e.event for e in events_after(store, 0)] == events


@pytest.mark.anyio
async def test_another_file_at_a_followed_path_is_stored_in_full(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    old, new = run_events(3), run_events(3)
    path.write_bytes(b"".join(line(e) for e in old))
    first, _ = follower(store, path)
    await first.step()
    path.write_bytes(b"".join(line(e) for e in new))
    again, _ = follower(store, path)
    await again.step()
    assert [e.event for e in events_after(store, 0)] == old + new


def test_following_something_that_is_not_a_file_is_refused(devtool: DevtoolRunner, tmp_path: Path) -> None:
    result = devtool("serve", "--db", str(tmp_path / "db.duckdb"), "--follow", str(tmp_path), "--port", "0")
    assert result.returncode == 2
    assert f"--follow {tmp_path}: not a file" in result.stderr


@pytest.mark.anyio
async def test_following_a_file_loaded_before_stores_only_what_is_new(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    events = run_events(6)
    # Written as Python's json writes it (spaces after separators): the line's own text is what counts.
    path.write_text("".join(json.dumps(e) + "\n" for e in events[:4]))
    load_file(store, path)
    tail, _ = follower(store, path)
    await tail.step()
    with path.open("a") as file:
        file.write("".join(json.dumps(e) + "\n" for e in events[4:]))
    await tail.step()
    assert [e.event for e in events_after(store, 0)] == events
    assert store.query("SELECT count(*) FROM events") == [(6,)]
