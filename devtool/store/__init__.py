"""The DevTool's store: a DuckDB file holding traces and process journals, and beside it a second,
`<file>.rewind`, holding snapshots and the frame indexes of big runs (`rewind_file.py`).

- `Store(path)`: the files, one writer (`writer()`, `transaction()`) and a cursor per reader;
  `store_files(path)`, every file a store is (copy them together).
- Loading: every TraceEvent comes in through one gate (`event_gate.py`, which says what a valid one
  is); `load_file(store, path, bad_lines=..., progress=...)` (one file, all or nothing, once per
  content); `store_events(store, checked, stream=...)` (a live batch the gate checked, one
  transaction, returns ids) and `append_events` (the same for TraceEvent dicts made in Python).
- Snapshots: `save_snapshot`, `get_snapshot`, `list_snapshots`, `snapshot_id` (kept as trees of frame
  nodes, `snapshots.py`); the frame indexes of big runs, `frame_index_tables.py` (a cut read from one,
  `frame_index_cut.py`).
- Reading: the named queries of `devtool.store.queries`, each returning frozen dataclasses.

The tables and what each holds are described in `schema.py` and `schema_rewind.py`; how spans are
derived, in `derive.py`.
"""

from __future__ import annotations

from devtool.store.database import Store
from devtool.store.errors import (
    BadLinesError,
    InvalidEventsError,
    LineProblem,
    LoadError,
    NotFoundError,
    SourceChangedError,
    StoreError,
    StoreLockedError,
)
from devtool.store.live_append import OTLP_STREAM, Stored, append_events, store_batch, store_events, trace_of
from devtool.store.load import BadLines, LoadResult, load_file
from devtool.store.rewind_file import store_files
from devtool.store.snapshots import (
    SnapshotInfo,
    StoredSnapshot,
    get_snapshot,
    list_snapshots,
    save_snapshot,
    snapshot_id,
)

__all__ = [
    "OTLP_STREAM",
    "BadLines",
    "BadLinesError",
    "InvalidEventsError",
    "LineProblem",
    "LoadError",
    "LoadResult",
    "NotFoundError",
    "SnapshotInfo",
    "SourceChangedError",
    "Store",
    "StoreError",
    "StoreLockedError",
    "Stored",
    "StoredSnapshot",
    "append_events",
    "get_snapshot",
    "list_snapshots",
    "load_file",
    "save_snapshot",
    "snapshot_id",
    "store_batch",
    "store_events",
    "store_files",
    "trace_of",
]
