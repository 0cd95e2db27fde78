"""Conversions between the DevTool's TraceEvents and other tools' trace formats (no I/O, no store).

- OpenTelemetry in: `decode_json_request` / `decode_protobuf_request` read an OTLP
  `ExportTraceServiceRequest` into `OtlpSpan`s (`Decoded`: the spans, and those refused with where
  and why); `otlp_events(spans)` maps them to TraceEvents by the GenAI and OpenInference conventions
  (`otlp_map.py` has the table). The store's file loader computes the same mapping in SQL.
- Out: `otlp_export` (any run as OTLP JSON with GenAI attributes) and `perfetto_export` (Chrome
  trace-event JSON, for Perfetto UI).

This layer may import `devtool.core` only. The protobuf reader needs `opentelemetry-proto` (the `web`
extra) and is imported on first use.
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
