"""How a JSONL file is shared between DuckDB readers: how many, and the lines each keeps.

DuckDB numbers a reader's objects on one thread, so a file is read by as many readers as DuckDB has
threads (up to `MAX_READERS`), each keeping its share of the file's lines (`event_sql.file_relation`)
in a pipeline of its own. The shares are cut from the file's size and the lines in a sample of its
middle, and need not be even, only near it. OTLP JSON files, whose lines are a few hundred KB each,
are not cut but dealt out line by line (`otlp_sql.file_lines`), over `readers` readers too.
"""

from __future__ import annotations

import os

import duckdb

MAX_READERS = 4  # each reads the file up to its share's end: more cost more reading than they save
_SAMPLE = 1 << 20
# The first reader reads only its own lines, each later one those before its share too: a first
# share this much above an even one evens out two readers' work (counting a line costs about a
# tenth of inserting it).
_FIRST_SHARE = 1.06


def readers(conn: duckdb.DuckDBPyConnection) -> int:
    """How many readers share a file on `conn`: one a thread, up to `MAX_READERS`."""
    threads = int(conn.execute("SELECT current_setting('threads')").fetchall()[0][0])
    return max(1, min(threads, MAX_READERS))


def cuts(path: str, readers: int) -> tuple[int, ...]:
    """The line numbers after which each reader but the first starts keeping lines, for `readers`
    readers of the JSONL file at `path`: none for one reader, or a file too small to split."""
    size = os.path.getsize(path)
    if readers < 2 or size < 4 * _SAMPLE:
        return ()
    with open(path, "rb") as file:
        file.seek(size // 2)
        newlines = file.read(_SAMPLE).count(b"\n")
    lines = size * newlines // _SAMPLE
    if lines < readers:
        return ()
    first = min(lines, int(lines / readers * _FIRST_SHARE))
    step = (lines - first) / (readers - 1)
    return tuple(first + int(step * index) for index in range(readers - 1))
