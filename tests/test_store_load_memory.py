"""A load into a store holding millions of events fits the memory it needs for its own file, and still
stores each event once."""

from __future__ import annotations

from pathlib import Path

from bench.gen_trace import generate
from devtool.store import Store, load_file

STORED = 3_000_000
# Enough for a 50,000-event file's load (its readers' buffers, its insert and derive) whatever the
# store holds; not enough for the hash table of 3,000,000 stored events' keys that the load built to
# leave out the ones it held (a second 10M-event run ran out of DuckDB's 1 GiB that way).
LIMIT = "160MiB"


def test_a_load_beside_millions_of_stored_events_reads_only_its_own_runs_keys(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.duckdb", memory_limit=LIMIT)
    # Another run's events, written straight into the table: loading them would take minutes. Their
    # keys are all the load's check for events stored already could read of them.
    with store.transaction() as conn:
        # The file's readers (one a thread, up to 4) each buffer twice their object limit: held to two
        # threads, the limit above fits the load on any machine.
        conn.execute("SET threads = 2")
        conn.execute(
            "INSERT INTO events (event_id, source_id, trace_id, span_id, type, ts, body, event_key) "
            f"SELECT i, 0, '{'a' * 32}', 's', 'custom:span:start', i, '{{}}', hash(i) FROM range(1, {STORED + 1}) t(i)"
        )
    trace = generate(tmp_path / "whole.jsonl", events=50_000, seed=3)
    lines = trace.path.read_bytes().splitlines(keepends=True)
    half = tmp_path / "half.jsonl"
    half.write_bytes(b"".join(lines[: len(lines) // 2]))

    assert load_file(store, half).events == len(lines) // 2
    # The whole run: only the half it did not hold is added, under the same small limit.
    grown = load_file(store, trace.path)
    assert grown.events == len(lines) - len(lines) // 2
    assert store.query(
        "SELECT count(*), count(DISTINCT event_key) FROM events WHERE trace_id = ?", [trace.trace_id]
    ) == [(len(lines), len(lines))]
    assert store.query("SELECT events FROM runs WHERE trace_id = ?", [trace.trace_id]) == [(len(lines),)]
    assert store.query("SELECT count(*) FROM events") == [(STORED + len(lines),)]
    store.close()
