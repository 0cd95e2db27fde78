"""The DevTool's store: one DuckDB file holding traces, process journals and snapshots.

- `Store(path)`: the file, one writer (`writer()`, `transaction()`) and a cursor per reader.
- Loading: `load_file(store, path, bad_lines=..., progress=...)` (one file, all or nothing, once per
  content); `append_events(store, events, stream=...)` (a live batch, one transaction, returns ids).
- Snapshots: `save_snapshot`, `get_snapshot`, `list_snapshots`, `snapshot_id` (kept as trees of frame
  nodes, `snapshots.py`); the rewind index of big runs, `rewind_index.py`.
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
from devtool.store.ingest import append_events
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
]
