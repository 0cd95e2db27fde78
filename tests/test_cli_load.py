"""`devtool load` (and `devtool serve FILES`) as a user runs them: real processes, a real DuckDB file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from devtool.store import Store
from tests.conftest import CORPUS, DevtoolRunner, Trace

NESTED = CORPUS / "rejelly" / "nested.trace.jsonl"
JOURNAL = CORPUS / "promptise" / "billing-ops.journal.jsonl"


def stored(db: Path, sql: str) -> list[tuple[object, ...]]:
    store = Store(db)
    try:
        return store.query(sql)
    finally:
        store.close()


def test_load_prints_a_line_per_file_and_a_summary(devtool: DevtoolRunner, tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    result = devtool("load", "--db", str(db), str(NESTED), str(JOURNAL))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"{NESTED}: 82 events, 48 spans, trace dfc19ffa56c7")
    assert lines[1].startswith(f"{JOURNAL}: 10 new journal entries, process billing-ops")
    assert lines[2] == "loaded 2 of 2 files: 82 events, 48 spans, 1 trace, 10 journal entries, 1 journal; 0 errors"
    assert result.stderr == ""
    assert stored(db, "SELECT count(*) FROM events") == [(82,)]
    again = devtool("load", "--db", str(db), str(NESTED))
    assert again.returncode == 0
    assert again.stdout.splitlines()[0] == f"{NESTED}: already loaded (82 events), nothing added"


def test_a_bad_file_fails_alone_in_one_line(devtool: DevtoolRunner, tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    bad = tmp_path / "bad.jsonl"
    bad.write_text(NESTED.read_text().replace('"type":"turn:start"', '"type":null', 1))
    result = devtool("load", "--db", str(db), str(bad), str(JOURNAL))
    assert result.returncode == 2
    (error,) = result.stderr.splitlines()
    assert error == (
        f'devtool load: error: {bad}: 1 bad line, nothing stored: line 7: no "type" '
        "(--bad-lines skip loads the good lines)"
    )
    assert result.stdout.splitlines()[-1].endswith("; 1 error")
    assert stored(db, "SELECT count(*) FROM events") == [(0,)]
    assert stored(db, "SELECT count(*) FROM journal_entries") == [(10,)]


def test_skipping_bad_lines_names_each(devtool: DevtoolRunner, tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    bad = tmp_path / "bad.jsonl"
    bad.write_text(NESTED.read_text() + "oops\n[1]\n")
    result = devtool("load", "--db", str(db), "--bad-lines", "skip", str(bad))
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == [
        f"{bad}:83: skipped: not JSON (unexpected character, expected a JSON value at column 1)",
        f"{bad}:84: skipped: not a JSON object but an array",
    ]
    assert "2 bad lines skipped" in result.stdout
    assert stored(db, "SELECT count(*), max(bad_lines) FROM events, sources") == [(82, 2)]


def test_the_progress_bar_counts_bytes(devtool: DevtoolRunner, tmp_path: Path) -> None:
    trace = Trace()
    root = trace.start("agent")
    for _ in range(2000):
        trace.end(trace.start("turn", root, note="y" * 1000))
    trace.end(root)
    path = trace.write(tmp_path / "big.jsonl")
    megabytes = round(path.stat().st_size / 1e6)
    result = devtool("load", "--db", str(tmp_path / "s.duckdb"), "--progress", str(path))
    assert result.returncode == 0, result.stderr
    assert f"big.jsonl reading [{'#' * 30}] {megabytes}/{megabytes} MB 100%" in result.stderr
    assert f"big.jsonl loading [{'#' * 30}] {megabytes}/{megabytes} MB 100%" in result.stderr
    quiet = devtool("load", "--db", str(tmp_path / "t.duckdb"), str(path))  # not a terminal: no bar
    assert quiet.stderr == ""


def test_a_database_another_devtool_holds(devtool: DevtoolRunner, tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    server = subprocess.Popen(
        [sys.executable, "-m", "devtool", "serve", "--db", str(db), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        assert server.stdout.readline().startswith("DevTool at ")
        result = devtool("load", "--db", str(db), str(NESTED))
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert result.returncode == 2
    (error,) = result.stderr.splitlines()
    assert f"database {db} is open in another process (pid {server.pid})" in error


def test_serve_loads_its_files_before_it_starts(devtool: DevtoolRunner, tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    result = devtool("serve", "--db", str(db), str(NESTED), "--get", "/")
    assert result.returncode == 0, result.stderr
    assert 'data-trace-id="dfc19ffa56c7ceafc8c61ea1cd2faea9"' in result.stdout
    assert result.stderr.splitlines()[-1].startswith("loaded 1 of 1 file: 82 events")
    refused = devtool("serve", "--db", str(db), str(tmp_path / "absent.jsonl"), "--get", "/")
    assert refused.returncode == 2
    assert f"devtool serve: error: {tmp_path / 'absent.jsonl'}: no such file" in refused.stderr


def test_load_needs_files(devtool: DevtoolRunner) -> None:
    result = devtool("load")
    assert result.returncode == 2
    assert "the following arguments are required: FILES" in result.stderr


def test_the_memory_limit_option_reaches_duckdb(devtool: DevtoolRunner, tmp_path: Path) -> None:
    t = Trace()
    t.end(t.start("agent"))
    db = tmp_path / "s.duckdb"
    loaded = devtool("load", "--db", str(db), "--memory-limit", "300MiB", str(t.write(tmp_path / "t.jsonl")))
    assert loaded.returncode == 0, loaded.stderr
    refused = devtool("load", "--db", str(db), "--memory-limit", "much", str(tmp_path / "t.jsonl"))
    assert refused.returncode != 0
    assert "Memory must have a number" in refused.stderr
