"""The DevTool's store: one DuckDB file holding traces, journals and snapshots.

Loading: `load_file(store, path)` (one file, all or nothing), `append_events(store, events)` (live).
Snapshots: `save_snapshot`, `get_snapshot`, `list_snapshots`.
Reading: the named queries in `devtool.store.queries`, each returning plain data.
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
