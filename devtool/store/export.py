"""Exports: a run's events as gzip JSONL, and a snapshot's document, for a teammate's own DevTool.

A run's export is its events exactly as they were loaded, one JSON object a line, in the order a
restore reads them (timestamp, then load order), gzip-compressed as it is produced (a run of a
million events never sits in memory). `devtool load` reads it back as it is; `export_snapshot` is the
snapshot document assembled from its stored frames (`devtool.core.snapshot_tree.snapshot_id` of it
is its id), which `devtool run --snapshot` and an upload take as it is.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator

import orjson

from devtool.store.database import Store
from devtool.store.queries.events import iter_run_events
from devtool.store.snapshots import get_snapshot

# gzip framing (not zlib's): what `gunzip`, Python's gzip module and `devtool load` read.
_GZIP = 16 + zlib.MAX_WBITS
_CHUNK = 1 << 20


def export_run(store: Store, trace_id: str) -> Iterator[bytes]:
    """Run `trace_id`'s events as gzip JSONL, in chunks; `NotFoundError` (before any chunk) if no run."""
    events = iter_run_events(store, trace_id)
    first = next(events, None)  # the run is looked up here, so a missing one fails before a byte is sent
    return _gzip_lines(first, events)


def _gzip_lines(first: dict[str, object] | None, rest: Iterator[dict[str, object]]) -> Iterator[bytes]:
    packer = zlib.compressobj(6, zlib.DEFLATED, _GZIP)
    buffer = bytearray()
    if first is not None:
        buffer += orjson.dumps(first, option=orjson.OPT_APPEND_NEWLINE)
    for event in rest:
        buffer += orjson.dumps(event, option=orjson.OPT_APPEND_NEWLINE)
        if len(buffer) >= _CHUNK:
            packed = packer.compress(bytes(buffer))
            buffer.clear()
            if packed:
                yield packed
    yield packer.compress(bytes(buffer)) + packer.flush()


def export_snapshot(store: Store, snapshot_id: str) -> bytes:
    """Snapshot `snapshot_id`, the whole document in its own key order; `NotFoundError` if there is none."""
    return orjson.dumps(get_snapshot(store, snapshot_id).snapshot)
