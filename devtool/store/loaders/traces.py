"""TraceEvents, one JSON object a line (ours and the TypeScript library's) or as one JSON array.

A JSONL file is read by as many readers as DuckDB has threads (up to `MAX_READERS`), each keeping
its share of the file's lines (`event_sql.file_relation`): the shares are cut from the file's size
and the lines in a sample of its middle, and need not be even, only near it. A JSON array is read
by one reader.
"""

from __future__ import annotations

import os
from typing import BinaryIO

import duckdb

from devtool.store.event_gate import trace_event_problem
from devtool.store.event_sql import file_relation, insert_events
from devtool.store.loaders.base import Inserted, Reading, Sample
from devtool.store.scan import Scan, scan_array, scan_jsonl
from devtool.store.search import index_source


def looks_like_event(obj: dict[str, object]) -> bool:
    """An object with a `type` is meant as an event: its faults are worth naming line by line."""
    return "type" in obj


class TraceJsonl:
    kind = "trace-jsonl"
    description = "TraceEvent JSONL"

    def claims(self, sample: Sample) -> bool:
        obj = sample.first_object
        return sample.first_byte != b"[" and obj is not None and looks_like_event(obj)

    def insert(self, conn: duckdb.DuckDBPyConnection, path: str, source_id: int, reading: Reading) -> Inserted:
        cuts = _cuts(path, _readers(conn))
        return _insert(conn, file_relation("newline_delimited", reading.max_object_size, cuts), source_id, path)

    def scan(self, source: BinaryIO, good: BinaryIO | None) -> Scan:
        return scan_jsonl(source, trace_event_problem, good)


class TraceArray:
    kind = "trace-json-array"
    description = "JSON array of TraceEvents"

    def claims(self, sample: Sample) -> bool:
        return sample.first_byte == b"["

    def insert(self, conn: duckdb.DuckDBPyConnection, path: str, source_id: int, reading: Reading) -> Inserted:
        return _insert(conn, file_relation(_array_format(reading), reading.max_object_size), source_id, path)

    def scan(self, source: BinaryIO, good: BinaryIO | None) -> Scan:
        return scan_array(source, trace_event_problem, good)


def _array_format(reading: Reading) -> str:
    """How DuckDB reads a JSON-array file: as an array, or as JSONL when it is a scan's copy of the good elements."""
    return "newline_delimited" if reading.jsonl else "array"


def _insert(conn: duckdb.DuckDBPyConnection, relation: str, source_id: int, path: str) -> Inserted:
    events, spans, traces = insert_events(conn, relation, source_id, {"path": path}, unordered=True)
    index_source(conn, source_id)
    return Inserted(events=events, spans=spans, traces=traces)


MAX_READERS = 4  # each reads the file up to its share's end: more cost more reading than they save
_SAMPLE = 1 << 20
# The first reader reads only its own lines, each later one those before its share too: a first
# share this much above an even one evens out two readers' work (counting a line costs about a
# tenth of inserting it).
_FIRST_SHARE = 1.06


def _readers(conn: duckdb.DuckDBPyConnection) -> int:
    threads = int(conn.execute("SELECT current_setting('threads')").fetchall()[0][0])
    return max(1, min(threads, MAX_READERS))


def _cuts(path: str, readers: int) -> tuple[int, ...]:
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
