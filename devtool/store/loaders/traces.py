"""TraceEvents, one JSON object a line (ours and the TypeScript library's) or as one JSON array."""

from __future__ import annotations

from typing import BinaryIO

import duckdb

from devtool.store.event_gate import trace_event_problem
from devtool.store.event_sql import file_bodies, file_relation, insert_events
from devtool.store.loaders.base import Inserted, Sample
from devtool.store.scan import Scan, scan_array, scan_jsonl


def looks_like_event(obj: dict[str, object]) -> bool:
    """An object with a `type` is meant as an event: its faults are worth naming line by line."""
    return "type" in obj


class TraceJsonl:
    kind = "trace-jsonl"
    description = "TraceEvent JSONL"

    def claims(self, sample: Sample) -> bool:
        obj = sample.first_object
        return sample.first_byte != b"[" and obj is not None and looks_like_event(obj)

    def insert(
        self,
        conn: duckdb.DuckDBPyConnection,
        path: str,
        source_id: int,
        *,
        jsonl: bool,
        max_object_size: int,
    ) -> Inserted:
        return _insert(conn, file_relation("newline_delimited", max_object_size), source_id, path)

    def scan(self, source: BinaryIO, good: BinaryIO | None) -> Scan:
        return scan_jsonl(source, trace_event_problem, good)

    def bodies(self, *, jsonl: bool, max_object_size: int) -> str:
        return file_bodies("newline_delimited", max_object_size)


class TraceArray:
    kind = "trace-json-array"
    description = "JSON array of TraceEvents"

    def claims(self, sample: Sample) -> bool:
        return sample.first_byte == b"["

    def insert(
        self,
        conn: duckdb.DuckDBPyConnection,
        path: str,
        source_id: int,
        *,
        jsonl: bool,
        max_object_size: int,
    ) -> Inserted:
        fmt = "newline_delimited" if jsonl else "array"
        return _insert(conn, file_relation(fmt, max_object_size), source_id, path)

    def scan(self, source: BinaryIO, good: BinaryIO | None) -> Scan:
        return scan_array(source, trace_event_problem, good)

    def bodies(self, *, jsonl: bool, max_object_size: int) -> str:
        return file_bodies("newline_delimited" if jsonl else "array", max_object_size)


def _insert(conn: duckdb.DuckDBPyConnection, relation: str, source_id: int, path: str) -> Inserted:
    events, spans, traces = insert_events(conn, relation, source_id, {"path": path})
    return Inserted(events=events, spans=spans, traces=traces)
