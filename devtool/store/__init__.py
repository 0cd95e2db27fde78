"""The DevTool's store: one DuckDB file holding traces, process journals and snapshots.

- `Store(path)`: the file, one writer (`writer()`, `transaction()`) and a cursor per reader.
- Loading: every TraceEvent comes in through one gate (`event_gate.py`, which says what a valid one
  is); `load_file(store, path, bad_lines=..., progress=...)` (one file, all or nothing, once per
  content); `store_events(store, checked, stream=...)` (a live batch the gate checked, one
  transaction, returns ids) and `append_events` (the same for TraceEvent dicts made in Python).
- Snapshots: `save_snapshot`, `get_snapshot`, `list_snapshots`, `snapshot_id` (kept as trees of frame
  nodes, `snapshots.py`); the frame indexes of big runs, `frame_index_tables.py`.
- Reading: the named queries of `devtool.store.queries`, each returning frozen dataclasses.

The tables and what each holds are described in `schema.py`; how spans are derived, in `derive.py`.
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
from devtool.store.live_append import OTLP_STREAM, append_events, store_events
from devtool.store.load import BadLines, LoadResult, load_file
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
    "StoredSnapshot",
    "append_events",
    "get_snapshot",
    "list_snapshots",
    "load_file",
    "save_snapshot",
    "snapshot_id",
    "store_events",
]
