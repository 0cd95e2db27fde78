"""OpenTelemetry traces as the Collector's file exporter writes them: one OTLP/JSON request a line.

Each line is an `ExportTraceServiceRequest` (`{"resourceSpans": [...]}`); its spans become TraceEvents
in SQL (`otlp_sql.py`), through DuckDB's reader, and are stored as any trace file's events are. A
line that cannot be read is named with its line number and the span in it (`resourceSpans[0].
scopeSpans[0].spans[3]: traceId ... is not 32 hex digits`), by the Python reader of the same format.
Lines are long (an exporter's batch is one line), so the format is told by the file's first bytes.
"""

from __future__ import annotations

import re
from typing import Any, BinaryIO

import duckdb

from devtool.formats import OtlpError, decode_json_request
from devtool.formats.native import EVENTS, carried_texts
from devtool.store.event_gate import Refused, read_line
from devtool.store.event_sql import insert_events
from devtool.store.loaders.base import Inserted, Reading, Sample
from devtool.store.otlp_sql import LINE_STRIDE, events_relation, file_lines, install_macros
from devtool.store.scan import Scan, scan_jsonl
from devtool.store.search import index_source

_HEAD = re.compile(rb'\{\s*"resourceSpans"\s*:')


KIND = "otlp-json"


class OtlpJsonl:
    kind = KIND
    description = "OTLP JSON (one ExportTraceServiceRequest a line)"

    def claims(self, sample: Sample) -> bool:
        obj = sample.first_object
        return bool(_HEAD.match(sample.head)) or (obj is not None and "resourceSpans" in obj)

    def insert(self, conn: duckdb.DuckDBPyConnection, path: str, source_id: int, reading: Reading) -> Inserted:
        install_macros(conn)
        relation = events_relation(file_lines(reading.max_object_size))
        events, spans, traces = insert_events(conn, relation, source_id, {"path": path})
        index_source(conn, source_id)
        return Inserted(events=events, spans=spans, traces=traces)

    def scan(self, source: BinaryIO, good: BinaryIO | None) -> Scan:
        return scan_jsonl(source, request_problem, good)


def request_problem(document: Any) -> str | None:
    """Why one line is not a readable OTLP request (its first refused span, or the request itself), or None."""
    try:
        decoded = decode_json_request(document)
    except OtlpError as exc:
        return str(exc)
    for span in decoded.spans:
        try:
            texts = carried_texts(span.attributes) or []
        except ValueError as exc:
            return f"span {span.span_id}: {exc}"
        for text in texts:
            problem = _carried_problem(text, span.trace_id)
            if problem is not None:
                return f"span {span.span_id}: an event of {EVENTS} {problem}"
    if decoded.rejected:
        first = decoded.rejected[0]
        more = f" (and {len(decoded.rejected) - 1} more spans)" if len(decoded.rejected) > 1 else ""
        return f"{first}{more}"
    if len(decoded.spans) > LINE_STRIDE // 2:
        return f"{len(decoded.spans):,} spans on one line, over the {LINE_STRIDE // 2:,} a line may hold"
    return None


def _carried_problem(text: str, trace_id: str) -> str | None:
    """Why a text a span carries is not one of its trace's events (`formats/native.py`), or None."""
    result = read_line(text.encode())
    if isinstance(result, Refused):
        return result.reason
    return None if result.event["trace"]["traceId"] == trace_id else "is of another trace than its span's"
