"""Where a JSONL file is cut into shares, one a reader, so that DuckDB reads and maps it on several threads.

A reader of `event_sql.file_relation` keeps the lines after one cut up to the next, and counts the
ones before its share (about a tenth of inserting them): the cuts are line numbers, estimated from
the file's size and the newlines in samples of it, and need not be exact, only near even.
"""

from __future__ import annotations

import os

import duckdb

_SAMPLE = 1 << 20


def line_cuts(path: str, readers: int, *, samples: int = 1, first_share: float = 1.0) -> tuple[int, ...]:
    """The line numbers after which each reader but the first starts keeping lines, for `readers`
    readers of the JSONL file at `path`: none for one reader, or a file too small to split.

    The lines are estimated from `samples` samples of up to a MiB spread over the file (one: from its
    middle on);
    `first_share` is the first reader's share over an even one (it reads only its own lines).
    """
    size = os.path.getsize(path)
    if readers < 2 or size < 4 * _SAMPLE:
        return ()
    newlines, read, block = 0, 0, min(_SAMPLE, size // (2 * samples))
    with open(path, "rb") as file:
        for index in range(samples):
            file.seek(size * (2 * index + 1) // (2 * samples))
            sample = file.read(block)
            newlines, read = newlines + sample.count(b"\n"), read + len(sample)
    lines = size * newlines // max(read, 1)
    if lines < readers:
        return ()
    first = min(lines, int(lines / readers * first_share))
    step = (lines - first) / (readers - 1)
    return tuple(first + int(step * index) for index in range(readers - 1))


def threads(conn: duckdb.DuckDBPyConnection) -> int:
    """DuckDB's threads on `conn`."""
    return int(conn.execute("SELECT current_setting('threads')").fetchall()[0][0])
