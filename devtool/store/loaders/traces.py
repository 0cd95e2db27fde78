"""TraceEvents, one JSON object a line (ours and the TypeScript library's) or as one JSON array.

A JSONL file is read by as many readers as DuckDB has threads, each keeping its share of the file's
lines (`shares.py`, `event_sql.file_relation`). A JSON array is read by one reader.
"""

from __future__ import annotations

from typing import BinaryIO

import duckdb

from devtool.store.event_gate import trace_event_problem
from devtool.store.event_sql import file_relation, insert_events
from devtool.store.loaders import shares
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
        cut = shares.cuts(path, shares.readers(conn))
        return _insert(conn, file_relation("newline_delimited", reading.max_object_size, cut), source_id, path)

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
