"""Exports: a run's events as gzip JSONL, as OTLP JSON or as Perfetto's JSON, and a snapshot's document.

A run's export is its events exactly as they were loaded (their stored texts: an event's identity,
DESIGN.md), one JSON object a line, in the order a
restore reads them (timestamp, then load order), gzip-compressed as it is produced (a run of a
million events never sits in memory). `devtool load` reads it back as it is; `export_snapshot` is the
snapshot document assembled from its stored frames (`devtool.core.snapshot_tree.snapshot_id` of it
is its id), which `devtool run --snapshot` and an upload take as it is.

`export_run_otlp` writes the run as OTLP JSON, one `ExportTraceServiceRequest` a line (the Collector's
file exporter's format: Jaeger, Tempo, Phoenix and `devtool load` read it), and `export_run_perfetto`
as Chrome trace-event JSON for Perfetto UI; `devtool.formats` says how spans map to each. Both stream.
The OTLP export's spans carry their events' stored texts (`devtool/formats/native.py`).
"""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Iterator
from typing import Any

import orjson

from devtool.formats.otlp_export import otlp_requests
from devtool.formats.perfetto import perfetto_trace
from devtool.store.collector import collector_paused
from devtool.store.database import Store
from devtool.store.queries.events import iter_run_bodies, iter_run_events
from devtool.store.queries.runs import get_run
from devtool.store.snapshots import get_snapshot

# gzip framing (not zlib's): what `gunzip`, Python's gzip module and `devtool load` read.
_GZIP = 16 + zlib.MAX_WBITS
_CHUNK = 1 << 20


def export_run(store: Store, trace_id: str) -> Iterator[bytes]:
    """Run `trace_id`'s events as gzip JSONL, in chunks; `NotFoundError` (before any chunk) if no run."""
    chunks = iter_run_bodies(store, trace_id)
    first = next(chunks, None)
    if first is None:
        get_run(store, trace_id, kind="trace")  # the run is looked up here, so a missing one fails first
    return _gzip_lines(itertools.chain([first] if first else [], chunks))


def _gzip_lines(chunks: Iterator[list[tuple[int, str]]]) -> Iterator[bytes]:
    """Each event's text as stored (its identity: loaded back, it is known as the event it is), a line
    each; a text that spans lines (an event of a JSON array file, written across them) made one line."""
    packer = zlib.compressobj(6, zlib.DEFLATED, _GZIP)
    buffer = bytearray()
    for chunk in chunks:
        for _, body in chunk:
            buffer += body.encode() if "\n" not in body else orjson.dumps(orjson.loads(body))
            buffer += b"\n"
        if len(buffer) >= _CHUNK:
            packed = packer.compress(bytes(buffer))
            buffer.clear()
            if packed:
                yield packed
    yield packer.compress(bytes(buffer)) + packer.flush()


def export_run_otlp(store: Store, trace_id: str) -> Iterator[bytes]:
    """Run `trace_id` as OTLP JSON lines; `NotFoundError` (before any line) if there is no such run."""
    get_run(store, trace_id, kind="trace")
    texts: dict[int, str] = {}
    requests = otlp_requests(_with_texts(store, trace_id, texts), texts=texts)
    return (orjson.dumps(request, option=orjson.OPT_APPEND_NEWLINE) for request in requests)


def _with_texts(store: Store, trace_id: str, texts: dict[int, str]) -> Iterator[dict[str, Any]]:
    """The run's events, each one's stored text put in `texts` by its `id()` (`otlp_requests` takes it out)."""
    for chunk in iter_run_bodies(store, trace_id):
        with collector_paused():
            events = [orjson.loads(body) for _, body in chunk]
        for event, (_, body) in zip(events, chunk, strict=True):
            texts[id(event)] = body
            yield event


def export_run_perfetto(store: Store, trace_id: str) -> Iterator[bytes]:
    """Run `trace_id` as Chrome trace-event JSON, in chunks; `NotFoundError` (before any) if there is no run."""
    run = get_run(store, trace_id, kind="trace")
    return perfetto_trace(iter_run_events(store, trace_id), name=f"{run.name} ({trace_id})")


def export_snapshot(store: Store, snapshot_id: str) -> bytes:
    """Snapshot `snapshot_id`, the whole document in its own key order; `NotFoundError` if there is none."""
    return orjson.dumps(get_snapshot(store, snapshot_id).snapshot)
