"""The OTLP ingest floor of issue 43: the least work ingest needs. Decode the same protobuf bodies,
write each span as a JSON line (its ids in hex, its attributes as an object), and store the lines with
DuckDB's bare `read_json` into a fresh database file; the seconds it all took."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

import duckdb
import orjson
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest


def _value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return {item.key: _value(item.value) for item in value.kvlist_value.values}
    if kind == "bytes_value":
        return value.bytes_value.hex()
    return getattr(value, kind) if kind else None


def measure(bodies: list[bytes]) -> float:
    with tempfile.TemporaryDirectory(prefix="peers-floor-") as folder:
        lines, db = Path(folder) / "spans.jsonl", Path(folder) / "floor.duckdb"
        began = time.perf_counter()
        with lines.open("wb") as out:
            for body in bodies:
                for resource in ExportTraceServiceRequest.FromString(body).resource_spans:
                    for scope in resource.scope_spans:
                        for span in scope.spans:
                            row = {
                                "trace_id": span.trace_id.hex(),
                                "span_id": span.span_id.hex(),
                                "parent_span_id": span.parent_span_id.hex(),
                                "name": span.name,
                                "kind": span.kind,
                                "start_ns": span.start_time_unix_nano,
                                "end_ns": span.end_time_unix_nano,
                                "attributes": {item.key: _value(item.value) for item in span.attributes},
                                "status": span.status.code,
                            }
                            out.write(orjson.dumps(row) + b"\n")
        with duckdb.connect(str(db)) as connection:
            connection.execute(f"CREATE TABLE spans AS SELECT * FROM read_json('{lines}')")
        return time.perf_counter() - began
