"""`load_file`: all or nothing, once per content, and a clear word about every bad line."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from devtool.store import (
    BadLines,
    BadLinesError,
    LoadError,
    SourceChangedError,
    Store,
    derive,
    load,
    load_file,
    scan,
)
from tests.conftest import CORPUS, Trace

TABLES = ("sources", "events", "spans", "runs", "journal_entries", "rewind.snapshots")


def contents(store: Store) -> dict[str, list[tuple[Any, ...]]]:
    """Everything the store holds, table by table, in a stable order."""
    return {table: sorted(map(repr, store.query(f"SELECT * FROM {table}"))) for table in TABLES}  # type: ignore[misc]


def small_run() -> Trace:
    trace = Trace()
    root = trace.start("runWith")
    agent = trace.start("agent", root, agentId="writer", callId="root/agent:writer:0")
    turn = trace.start("turn", agent, step=0, callId="root/agent:writer:0/prompt:writer:0")
    trace.end(turn, success=True, contentHash="c" * 64, cache=False)
    trace.end(agent, success=True)
    trace.end(root, success=True)
    return trace


def lines(*items: bytes | dict[str, Any]) -> bytes:
    return b"".join((item if isinstance(item, bytes) else orjson.dumps(item)) + b"\n" for item in items)


@pytest.fixture
def loaded(store: Store, tmp_path: Path) -> Store:
    """A store that already holds one run, so 'unchanged' means more than 'empty'."""
    load_file(store, small_run().write(tmp_path / "first.jsonl"))
    return store


GOOD = small_run().events[0]


def with_(**changes: Any) -> dict[str, Any]:
    event = {**GOOD, **changes}
    return {key: value for key, value in event.items() if value is not ...}


BAD_LINES = [
    pytest.param(b'{"type": "runWith:start", "timestamp": ', "not JSON: cut short", id="not-json"),
    pytest.param(b'{"type": "runWith:start", "note": "caf\xe9"}', "not UTF-8 text (byte 0xe9", id="not-utf8"),
    pytest.param(b"[1, 2, 3]", "not a JSON object but an array", id="not-an-object"),
    pytest.param(b'"just a string"', "not a JSON object but a string", id="a-string"),
    pytest.param(with_(type=...), 'no "type"', id="no-type"),
    pytest.param(with_(type=""), '"type" is empty', id="empty-type"),
    pytest.param(with_(timestamp="2026-01-01T00:00:00Z"), '"timestamp" is a string', id="timestamp-string"),
    pytest.param(with_(timestamp=True), '"timestamp" is a boolean', id="timestamp-boolean"),
    pytest.param(with_(timestamp=...), 'no "timestamp"', id="no-timestamp"),
    pytest.param(with_(schemaVersion=2), 'unknown "schemaVersion" 2', id="schema-version-2"),
    pytest.param(with_(schemaVersion="1"), "unknown \"schemaVersion\" '1'", id="schema-version-string"),
    pytest.param(with_(schemaVersion=...), 'no "schemaVersion"', id="no-schema-version"),
    pytest.param(with_(trace=...), 'no "trace"', id="no-trace"),
    pytest.param(with_(trace="abc"), '"trace" is a string, not an object', id="trace-string"),
    pytest.param(with_(trace={"traceId": "t" * 32, "parentSpanId": ""}), 'no "trace.spanId"', id="no-span-id"),
    pytest.param(with_(trace={"spanId": "s" * 16}), 'no "trace.traceId"', id="no-trace-id"),
    pytest.param(b"\x00\x00\x00\x00", "binary data (a NUL byte at column 1)", id="nul-bytes"),
]


@pytest.mark.parametrize(("bad", "message"), BAD_LINES)
def test_a_bad_line_rejects_the_file_naming_line_and_problem(
    loaded: Store, tmp_path: Path, bad: bytes | dict[str, Any], message: str
) -> None:
    good = small_run().events
    path = tmp_path / "bad.jsonl"
    path.write_bytes(lines(*good[:2], b"", bad, *good[2:]))  # the blank line 3 counts, and is no problem
    before = contents(loaded)
    with pytest.raises(BadLinesError) as caught:
        load_file(loaded, path)
    (problem,) = caught.value.problems
    assert problem.line == 4
    assert problem.message.startswith(message)
    assert str(caught.value).startswith(f"{path}: 1 bad line, nothing stored: {problem.where()}: {message}")
    # Where a line stops being JSON is said to the column, in the reader's words, not the parser's.
    assert problem.where() == ("line 4, column 39" if message.startswith("not JSON") else "line 4")
    assert contents(loaded) == before


@pytest.mark.parametrize(("bad", "message"), BAD_LINES)
def test_skipping_bad_lines_loads_every_good_one(
    loaded: Store, tmp_path: Path, bad: bytes | dict[str, Any], message: str
) -> None:
    good = small_run().events
    path = tmp_path / "bad.jsonl"
    path.write_bytes(lines(*good[:3], bad, *good[3:]))
    result = load_file(loaded, path, bad_lines=BadLines.SKIP)
    assert result.events == len(good)
    assert result.bad_lines == 1
    assert result.problems[0].line == 4
    assert result.problems[0].message.startswith(message)
    stored = loaded.query("SELECT count(*), max(bad_lines) FROM sources WHERE source_id = ?", [result.source_id])
    assert stored == [(1, 1)]
    assert loaded.query("SELECT count(*) FROM events WHERE source_id = ?", [result.source_id]) == [(len(good),)]


def test_every_bad_line_is_named_and_the_message_counts_them(store: Store, tmp_path: Path) -> None:
    good = small_run().events
    path = tmp_path / "many.jsonl"
    path.write_bytes(lines(b"nope", *good, b"[]", with_(type=...), b"{", with_(schemaVersion=3)))
    with pytest.raises(BadLinesError) as caught:
        load_file(store, path)
    assert [p.line for p in caught.value.problems] == [1, 8, 9, 10, 11]
    assert caught.value.total == 5
    assert str(caught.value).endswith("; and 2 more")
    assert store.query("SELECT count(*) FROM events") == [(0,)]


def test_a_file_of_only_bad_lines_loads_nothing_even_when_skipping(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "notes.jsonl"
    path.write_bytes(b'{"type": "note"}\n{"type": "other"}\n')
    with pytest.raises(BadLinesError, match='2 bad lines, nothing stored: line 1: no "timestamp"'):
        load_file(store, path, bad_lines=BadLines.SKIP)
    assert store.query("SELECT count(*) FROM sources") == [(0,)]


def test_the_torn_last_line_of_a_crashed_writer_is_named(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "torn.jsonl"
    path.write_bytes(lines(*small_run().events) + b'{"type": "turn:start", "timest')
    with pytest.raises(BadLinesError, match="line 7, column 31: not JSON: cut short"):
        load_file(store, path)
    result = load_file(store, path, bad_lines=BadLines.SKIP)
    assert (result.events, result.bad_lines) == (6, 1)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param(b"", "is empty: nothing to load", id="empty"),
        pytest.param(b"\n  \n\t\n", "holds only blank lines", id="blank"),
        pytest.param(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4, "is a PNG image", id="png"),
        pytest.param(b"\x1f\x8b\x08\x00" + os.urandom(512), "is not a whole gzip file", id="gzip"),
        pytest.param(b"PK\x03\x04" + os.urandom(512), "is a zip archive", id="zip"),
        pytest.param(b"\xff\xfe{\x00}\x00", "is UTF-16 text", id="utf16"),
        pytest.param(bytes([0x80 + (i % 60) for i in range(4096)]), "is binary (mostly not UTF-8 text)", id="latin"),
        pytest.param(b"abc\x00def" * 100, "is binary (a NUL byte at offset 3)", id="nul"),
        pytest.param(b'{"name": "x", "rows": [1, 2]}\n', "is neither a trace nor a journal", id="other-json"),
        pytest.param(b'{\n  "a": 1,\n  "b": [2]\n}\n', "is a single JSON object (keys a, b)", id="one-object"),
    ],
)
def test_what_is_not_a_trace_or_journal_is_called_what_it_is(
    loaded: Store, tmp_path: Path, content: bytes, message: str
) -> None:
    path = tmp_path / "input.jsonl"
    path.write_bytes(content)
    before = contents(loaded)
    with pytest.raises(LoadError, match=re.escape(message)):
        load_file(loaded, path)
    assert contents(loaded) == before


def test_a_snapshot_is_not_mistaken_for_a_trace(store: Store) -> None:
    with pytest.raises(LoadError, match="is an AgentSnapshot, not a trace"):
        load_file(store, CORPUS / "rejelly" / "nested.dump.json")


def test_a_duckdb_file_is_not_read_as_text(store: Store, tmp_path: Path) -> None:
    other = Store(tmp_path / "other.duckdb")
    other.close()
    with pytest.raises(LoadError, match="is a DuckDB database"):
        load_file(store, tmp_path / "other.duckdb")


def test_missing_files_and_directories_say_so(store: Store, tmp_path: Path) -> None:
    with pytest.raises(LoadError, match="no such file"):
        load_file(store, tmp_path / "absent.jsonl")
    with pytest.raises(LoadError, match="is a directory"):
        load_file(store, tmp_path)


def test_the_same_content_loads_once(store: Store, tmp_path: Path) -> None:
    path = small_run().write(tmp_path / "run.jsonl")
    first = load_file(store, path)
    after_first = contents(store)
    again = load_file(store, path)
    copy = tmp_path / "copy-of-run.jsonl"
    copy.write_bytes(path.read_bytes())
    elsewhere = load_file(store, copy)
    assert not first.already_loaded
    assert again.already_loaded
    assert elsewhere.already_loaded
    assert again.source_id == elsewhere.source_id == first.source_id
    assert (again.events, again.content_hash) == (first.events, first.content_hash)
    assert contents(store) == after_first


def test_a_failure_after_the_events_are_in_leaves_nothing(
    loaded: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The load is one transaction: events, spans, runs and the source commit together or not at all."""
    path = small_run().write(tmp_path / "run.jsonl")
    before = contents(loaded)

    def broken(*args: object) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(derive, "refresh", broken)
    with pytest.raises(RuntimeError, match="disk on fire"):
        load_file(loaded, path)
    assert contents(loaded) == before
    monkeypatch.undo()
    assert load_file(loaded, path).events == 6


def test_a_line_of_tens_of_megabytes_loads_whole(store: Store, tmp_path: Path) -> None:
    trace = small_run()
    output = "x" * (30 << 20)
    tools = trace.start("tools:execute", trace.events[1]["trace"]["spanId"])
    trace.end(tools, success=True, toolResults=[{"callId": "c", "toolName": "dump", "output": output}])
    path = trace.write(tmp_path / "big-line.jsonl")
    result = load_file(store, path)
    assert result.events == 8
    (length,) = store.query(
        "SELECT length(body->>'$.toolResults[0].output') FROM events WHERE type = 'tools:execute:end'"
    )[0]
    assert length == len(output)


def test_a_file_of_one_event_longer_than_the_sniffed_head_loads(store: Store, tmp_path: Path) -> None:
    # The whole file is one JSON object on one line, longer than what detection reads first: it is
    # still one event (a run cut short after its first, large, event), not "a single JSON object".
    trace = small_run()
    first = {**trace.events[0], "props": {"prompt": "x" * (200 << 10)}}
    path = tmp_path / "one-event.jsonl"
    path.write_bytes(lines(first))
    result = load_file(store, path)
    assert result.events == 1
    assert result.traces == (trace.trace_id,)


def test_a_line_over_the_limit_is_named_without_being_held(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scan, "MAX_LINE", 1 << 20)
    monkeypatch.setattr(load, "MAX_LINE", 1 << 20)
    monkeypatch.setattr(load, "DEFAULT_OBJECT_SIZE", 1 << 19)
    good = small_run().events
    path = tmp_path / "long.jsonl"
    path.write_bytes(lines(good[0], with_(note="y" * (3 << 20)), *good[1:]))
    with pytest.raises(BadLinesError, match="line 2: is 3 MiB long, over the 1 MiB limit"):
        load_file(store, path)
    assert load_file(store, path, bad_lines=BadLines.SKIP).events == 6


def test_a_file_deleted_while_it_loads_is_still_read_whole(store: Store, tmp_path: Path) -> None:
    trace = Trace()
    root = trace.start("runWith")
    for _ in range(3000):
        trace.end(trace.start("agent", root, note="z" * 500))
    trace.end(root)
    path = trace.write(tmp_path / "vanishing.jsonl")

    def delete_it(phase: str, done: int, total: int) -> None:
        if path.exists():
            path.unlink()

    result = load_file(store, path, progress=delete_it)
    assert not path.exists()
    assert result.events == len(trace.events)
    assert store.query("SELECT count(*) FROM spans") == [(3001,)]


def test_a_file_rewritten_while_it_is_read_is_refused(loaded: Store, tmp_path: Path) -> None:
    trace = Trace()
    root = trace.start("runWith")
    for _ in range(5000):
        trace.end(trace.start("agent", root, note="z" * 500))
    trace.end(root)
    path = trace.write(tmp_path / "shrinking.jsonl")
    before = contents(loaded)

    def truncate(phase: str, done: int, total: int) -> None:
        if phase == "reading" and path.stat().st_size == total:
            os.truncate(path, total // 2)

    with pytest.raises(SourceChangedError, match="changed while being read"):
        load_file(loaded, path, progress=truncate)
    assert contents(loaded) == before


def test_a_file_written_to_while_it_loads_is_refused(
    loaded: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = small_run().write(tmp_path / "growing.jsonl")
    before = contents(loaded)
    refresh = derive.refresh

    def append_then_refresh(*args: Any) -> Any:
        """A writer appends to the file after DuckDB read it, before the load commits."""
        with path.open("ab") as handle:
            handle.write(lines(*small_run().events))
        return refresh(*args)

    monkeypatch.setattr(derive, "refresh", append_then_refresh)
    with pytest.raises(SourceChangedError, match="was modified while it was being loaded: nothing stored"):
        load_file(loaded, path)
    assert contents(loaded) == before


def test_a_json_array_names_its_bad_element(store: Store, tmp_path: Path) -> None:
    events = small_run().events
    path = tmp_path / "events.json"
    path.write_bytes(orjson.dumps([*events[:2], with_(timestamp="soon"), *events[2:]], option=orjson.OPT_INDENT_2))
    with pytest.raises(BadLinesError, match='element 2: "timestamp" is a string'):
        load_file(store, path)
    result = load_file(store, path, bad_lines=BadLines.SKIP)
    assert (result.kind, result.events, result.problems[0].element) == ("trace-json-array", 6, 2)


def test_a_json_array_that_is_not_json_says_where(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "events.json"
    path.write_bytes(b'[\n  {"type": "a"},\n  {"type": \n]')
    with pytest.raises(BadLinesError, match="line 4, column 1: not JSON: “]”"):
        load_file(store, path)


def test_a_journal_names_its_bad_lines(store: Store, tmp_path: Path) -> None:
    entry = {"entry_id": "e1", "process_id": "p", "timestamp": "2026-07-16T02:00:00+00:00", "entry_type": "tick"}
    path = tmp_path / "p.jsonl"
    path.write_bytes(
        lines(
            entry,
            {**entry, "entry_id": "e2", "timestamp": "yesterday"},
            {**entry, "entry_id": "e3", "timestamp": "2026-07-16T25:00:00"},
            {**entry, "entry_id": 4},
            {**entry, "entry_id": "e5", "data": [1]},
            {**entry, "entry_id": "e6", "process_id": ""},
        )
    )
    with pytest.raises(BadLinesError) as caught:
        load_file(store, path)
    assert [(p.line, p.message) for p in caught.value.problems] == [
        (2, "\"timestamp\" 'yesterday' is not ISO 8601"),
        (3, "\"timestamp\" '2026-07-16T25:00:00' is not ISO 8601"),
        (4, '"entry_id" is a number, not a string'),
        (5, '"data" is an array, not an object'),
        (6, 'no "process_id"'),
    ]
    assert load_file(store, path, bad_lines=BadLines.SKIP).journal_entries == 1


@pytest.mark.slow
def test_a_file_of_gigabytes_with_a_broken_tail_is_named_in_bounded_memory(tmp_path: Path) -> None:
    """4,400 MiB: well past 32-bit offsets. The bad 'line' is a hole of zero bytes (a crash can leave
    one), over the line limit: it is reported by number and size, and never held in memory."""
    import os
    import subprocess
    import sys

    from testkit.checkout import child_env

    path = tmp_path / "huge.jsonl"
    good = lines(*small_run().events) * 40  # > 64 KiB of good lines before the hole
    with path.open("wb") as handle:
        handle.write(good)
        handle.seek(len(good) + (4400 << 20))
        handle.write(b"\n" + lines(GOOD))
    child = subprocess.Popen(
        [sys.executable, "-m", "devtool", "load", "--db", str(tmp_path / "s.duckdb"), str(path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(),
    )
    assert child.stderr is not None
    stderr = child.stderr.read()
    # wait4 gives this child's own peak memory (RUSAGE_CHILDREN would be the largest of the session's).
    _, status, usage = os.wait4(child.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 2, stderr
    assert "line 241: is 4,400 MiB long, over the 64 MiB limit of one line" in stderr
    # Never the 4,400 MiB line in memory: DuckDB's reader buffers up to its object limit (64 MiB)
    # a few times over while it finds the line too long (0.6 GiB alone, up to 2.06 GiB seen under the
    # suite's load), then the scan streams. The line is far larger than that, so the bound between
    # them tells a held line from DuckDB's buffers.
    assert usage.ru_maxrss < 3_000 * 1024  # KiB


def test_a_file_overlapping_one_loaded_before_adds_only_its_new_events(store: Store, tmp_path: Path) -> None:
    lines = (CORPUS / "rejelly" / "nested.trace.jsonl").read_bytes().splitlines(keepends=True)
    half = tmp_path / "half.jsonl"
    half.write_bytes(b"".join(lines[: len(lines) // 2]))
    whole = tmp_path / "whole.jsonl"
    whole.write_bytes(b"".join(lines))
    assert load_file(store, half).events == len(lines) // 2
    grown = load_file(store, whole)
    assert grown.events == len(lines) - len(lines) // 2
    assert store.query("SELECT count(*), count(DISTINCT event_key) FROM events") == [(len(lines), len(lines))]
    (trace_id,) = grown.traces
    assert store.query("SELECT events FROM runs WHERE trace_id = ?", [trace_id]) == [(len(lines),)]
    # The first half again, under another name: nothing new, and said so.
    again = tmp_path / "again.jsonl"
    again.write_bytes(b"".join(lines[:5]))
    repeat = load_file(store, again)
    assert repeat.already_loaded
    assert repeat.events == 0
    assert store.query("SELECT count(*) FROM events") == [(len(lines),)]
