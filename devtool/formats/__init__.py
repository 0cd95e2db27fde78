"""Conversions between the DevTool's TraceEvents and other tools' trace formats (no I/O, no store).

- OpenTelemetry in: `decode_json_request` (here) and `otlp_proto.decode_protobuf_request` read an
  OTLP `ExportTraceServiceRequest` into `OtlpSpan`s (`Decoded`: the spans, and those refused with
  where and why); `otlp_events(spans)` maps them to TraceEvents by the GenAI and OpenInference
  conventions (`otlp_map.py` has the table). The store's file loader computes the same mapping in SQL.
  `otlp_logs.py` reads OTLP log requests written inside spans (the older GenAI conventions' messages)
  as span events, and holds them until their span comes (`SpanLogs`).
- Out, from a run's TraceEvents in store order (`pairing.paired_spans` pairs them into spans):
  `otlp_export.otlp_requests` (OTLP JSON with GenAI attributes, a request per batch of spans) and
  `perfetto.perfetto_trace` (Chrome trace-event JSON, for Perfetto UI). An exported span carries the
  texts of the events it was made of (`native.py`), which reading it back gives again.
- `otlp_count.py` counts a request's spans or log records before it is decoded.

This layer may import `devtool.core` only. `otlp_proto` needs `opentelemetry-proto` (the `web` extra),
so it is not imported here: import it where protobuf is read.
"""

from __future__ import annotations

from devtool.formats.errors import FormatError, OtlpError
from devtool.formats.otlp_map import otlp_events, span_events, span_kind
from devtool.formats.otlp_spans import Decoded, OtlpEvent, OtlpLink, OtlpSpan, Rejected, decode_json_request

__all__ = [
    "Decoded",
    "FormatError",
    "OtlpError",
    "OtlpEvent",
    "OtlpLink",
    "OtlpSpan",
    "Rejected",
    "decode_json_request",
    "otlp_events",
    "span_events",
    "span_kind",
]
