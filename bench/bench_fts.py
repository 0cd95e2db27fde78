"""DuckDB's `fts` extension against our search indexes, on a copy of a loaded store (issue 44).

    python bench/bench_fts.py STORE WORKDIR

STORE is a store made by `devtool load` of a `gen_trace.py` trace; it is copied (with its rewind
file) into WORKDIR. Two FTS indexes are built on the copy and timed: the span search's (a document
per `span_text` row) and the runs search's (a document per event: its type, agent id, callId and
JSON text, what `search.terms_sql` reads). Each word is then asked both ways, median of 7: ours as a
plain scan (`span_text`, `search_terms`), FTS through `match_bm25`.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import time
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from devtool.store.extensions import load_extension

WORDS = ("worker", "researcher", "zzzqqq", "timeout")
SPAN_OURS = "SELECT span_id, start_ts FROM span_text WHERE contains(text, lower($1)) ORDER BY start_ts LIMIT 100"
SPAN_FTS = """
    SELECT span_id, start_ts FROM (SELECT *, fts_main_span_docs.match_bm25(id, $1) AS score FROM span_docs)
    WHERE score IS NOT NULL ORDER BY start_ts LIMIT 100
"""
RUNS_OURS = "SELECT DISTINCT trace_id FROM search_terms WHERE contains(term, $1)"
RUNS_FTS = """
    SELECT DISTINCT trace_id FROM (SELECT trace_id, fts_main_event_docs.match_bm25(id, $1) AS score FROM event_docs)
    WHERE score IS NOT NULL
"""
INDEX = "PRAGMA create_fts_index('{table}', 'id', 'text', stemmer='none', stopwords='none', lower=1, overwrite=1)"


def timed(conn: duckdb.DuckDBPyConnection, sql: str, word: str, repeat: int = 7) -> tuple[float, int]:
    times, rows = [], 0
    for _ in range(repeat):
        start = time.perf_counter()
        rows = len(conn.execute(sql, [word]).fetchall())
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), rows


def seconds(conn: duckdb.DuckDBPyConnection, sql: str) -> float:
    start = time.perf_counter()
    conn.execute(sql)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("workdir", type=Path)
    args = parser.parse_args()
    copy = args.workdir / "fts.duckdb"
    shutil.copy(args.store, copy)
    shutil.copy(f"{args.store}.rewind", f"{copy}.rewind")
    conn = duckdb.connect(str(copy))
    conn.execute("SET memory_limit = '1GB'")
    load_extension(conn, "fts")
    print(f"DuckDB {duckdb.__version__}")
    docs = seconds(conn, "CREATE TABLE span_docs AS SELECT row_number() OVER () AS id, * FROM span_text")
    build = seconds(conn, INDEX.format(table="span_docs"))
    print(f"span search: documents {docs:.1f} s, FTS index {build:.1f} s")
    for word in WORDS:
        (ours, hits), (fts, fts_hits) = timed(conn, SPAN_OURS, word), timed(conn, SPAN_FTS, word)
        print(f"  {word!r}: ours {ours:.1f} ms ({hits} hits), FTS {fts:.1f} ms ({fts_hits} hits)")
    docs = seconds(
        conn,
        "CREATE TABLE event_docs AS SELECT event_id AS id, trace_id,"
        " concat_ws(' ', type, agent_id, call_id, body::VARCHAR) AS text FROM events",
    )
    build = seconds(conn, INDEX.format(table="event_docs"))
    print(f"runs search: documents {docs:.1f} s, FTS index {build:.1f} s")
    for word in WORDS:
        (ours, hits), (fts, fts_hits) = timed(conn, RUNS_OURS, word), timed(conn, RUNS_FTS, word)
        print(f"  {word!r}: ours {ours:.1f} ms ({hits} runs), FTS {fts:.1f} ms ({fts_hits} runs)")


if __name__ == "__main__":
    main()
