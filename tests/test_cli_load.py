"""`devtool load` (and `devtool serve FILES`) as a user runs them: real processes, a real DuckDB file,
and a real `devtool serve` that owns the database while the command runs beside it."""

from __future__ import annotations

import urllib.request
from pathlib import Path

from devtool.store import Store
from tests.conftest import CORPUS, DevtoolRunner, Trace, held_open, running_serve
from tests.otlp_factory import genai_run, write_jsonl

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
    # Spans as the run's page counts them (its header, tree and timeline): its 27 instants, prompt
    # loops and model calls are not counted.
    assert lines[0].startswith(f"{NESTED}: 82 events, 21 spans, trace dfc19ffa56c7")
    assert lines[1].startswith(f"{JOURNAL}: 10 new journal entries, process billing-ops")
    assert lines[2] == "loaded 2 of 2 files: 82 events, 21 spans, 1 trace, 10 journal entries, 1 journal; 0 errors"
    assert result.stderr == ""
    assert stored(db, "SELECT count(*) FROM events") == [(82,)]
    assert stored(db, "SELECT spans FROM runs") == [(21,)]
    again = devtool("load", "--db", str(db), str(NESTED))
    assert again.returncode == 0
    assert again.stdout.splitlines()[0] == f"{NESTED}: already loaded (82 events), nothing added"


def test_an_otlp_file_is_counted_in_events_spans_and_traces(devtool: DevtoolRunner, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "spans.otlp.jsonl", [genai_run()])
    result = devtool("load", "--db", str(tmp_path / "s.duckdb"), str(path))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0].startswith(f"{path}: 8 events, 4 spans, trace {'1' * 12} (")


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
        f"{bad}:83:1: skipped: not JSON: “oops”",
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


def test_load_beside_a_running_devtool_loads_through_it(devtool: DevtoolRunner, tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    (tmp_path / "bad.jsonl").write_text("not json\n")
    (tmp_path / "nested.jsonl").write_bytes(NESTED.read_bytes())
    with running_serve(db) as server:
        url = server.url
        # A relative path, as a user types it: the server reads it where the command stands.
        result = devtool("load", "--db", str(db), "nested.jsonl")
        again = devtool("load", "--db", str(db), "--memory-limit", "2GiB", "nested.jsonl", "bad.jsonl")
        page = urllib.request.urlopen(url).read().decode()
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0].startswith("nested.jsonl: 82 events, 21 spans, trace dfc19ffa56c7")
    assert f"the DevTool at {url} has this database open: loading through it" in result.stderr
    assert "--memory-limit" not in result.stderr
    assert "--memory-limit 2GiB is not used: the server loads within its own limit" in again.stderr
    assert 'data-trace-id="dfc19ffa56c7ceafc8c61ea1cd2faea9"' in page  # the server shows it at once
    assert again.returncode == 2
    assert again.stdout.splitlines()[0] == "nested.jsonl: already loaded (82 events), nothing added"
    assert "bad.jsonl: 1 bad line, nothing stored: line 1, column 1: not JSON" in again.stderr
    assert "(--bad-lines skip loads the good lines)" in again.stderr
    assert server.process.returncode is not None
    assert not (tmp_path / "s.duckdb.server.json").exists()  # the server took its file away
    assert stored(db, "SELECT count(*) FROM events") == [(82,)]


def test_a_database_another_process_holds_says_which(devtool: DevtoolRunner, tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    Store(db).close()
    with held_open(db) as pid:
        result = devtool("load", "--db", str(db), str(NESTED))
    assert result.returncode == 2
    (error,) = result.stderr.splitlines()
    assert f"database {db} is open in another process (pid {pid})" in error


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


def test_a_file_too_big_for_the_memory_limit_says_so_and_keeps_what_was_stored(
    devtool: DevtoolRunner, tmp_path: Path
) -> None:
    db = tmp_path / "s.duckdb"
    assert devtool("load", "--db", str(db), str(NESTED)).returncode == 0
    t = Trace()
    root = t.start("runWith")
    for n in range(300):
        t.end(t.start("agent", root, agentId=f"worker-{n}", props={"brief": "x" * 200}), success=True)
    t.end(root, success=True)
    big = t.write(tmp_path / "big.jsonl")
    result = devtool("load", "--db", str(db), "--memory-limit", "4MiB", str(big))
    assert result.returncode == 2
    (error,) = result.stderr.splitlines()
    # Its lines are fine: it is not called unreadable, and none of them is named as bad.
    assert error.startswith(f"devtool load: error: {big}: DuckDB ran out of memory loading it, so nothing of it")
    assert error.endswith("let it use more with --memory-limit (say 2GiB), or load it on a machine with more memory")
    assert "4.0 MiB used" in error
    assert stored(db, "SELECT count(*) FROM events") == [(82,)]
