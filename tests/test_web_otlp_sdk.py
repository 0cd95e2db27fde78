"""The OpenTelemetry SDK's own OTLP/HTTP exporter against a real `devtool serve`, with spans the store
refuses mixed in (issue 42): every good span is stored, the bad ones refused one by one, and the
process reading the requests lives on (in a worker process, or in the server's threads)."""

from __future__ import annotations

from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from devtool.store import Store
from testkit.served import serving

T0 = 1_790_000_000_000_000_000


def spans(count: int, bad_every: int) -> tuple[list[ReadableSpan], int]:
    """`count` ended spans of one trace, every `bad_every`-th with a time outside 2000-2100 (start 1 ns,
    or end 2^64-1 ns); and how many are bad."""
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("sdk-test")
    bad = 0
    with tracer.start_as_current_span("root", start_time=T0) as root:
        for n in range(count - 1):
            start, end = T0 + n * 1_000, T0 + n * 1_000 + 500
            if n % bad_every == bad_every - 1:
                bad += 1
                start, end = (1, end) if bad % 2 else (start, (1 << 64) - 1)
            child = tracer.start_span(f"step {n}", start_time=start, attributes={"step": n})
            child.end(end_time=end)
        root.end(end_time=T0 + count * 1_000)
    provider.shutdown()
    return list(memory.get_finished_spans()), bad


@pytest.mark.parametrize("workers", ["1", "0"])
def test_the_sdk_exporter_stores_every_good_span_of_a_batch_with_bad_ones(tmp_path: Path, workers: str) -> None:
    sent, bad = spans(52, bad_every=7)
    assert (len(sent), bad) == (52, 7)
    trace_id = f"{sent[0].context.trace_id:032x}"
    with serving(tmp_path / "sdk.duckdb", "--otlp-workers", workers, log=tmp_path / "serve.log") as server:
        exporter = OTLPSpanExporter(endpoint=f"{server.url}v1/traces", timeout=30)
        assert exporter.export(sent) == SpanExportResult.SUCCESS  # a partial success, which it logs
        # The reader lives on: the next export is read and stored.
        again, _ = spans(3, bad_every=100)
        assert exporter.export(again) == SpanExportResult.SUCCESS
        exporter.shutdown()
        assert "Traceback" not in server.output()
    store = Store(tmp_path / "sdk.duckdb")
    try:
        stored = dict(store.query("SELECT trace_id, count(*) FROM events GROUP BY 1"))
    finally:
        store.close()
    assert stored[trace_id] == 2 * (52 - bad)
    assert stored[f"{again[0].context.trace_id:032x}"] == 6
