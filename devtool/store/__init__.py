"""The DevTool's store: one DuckDB file holding traces, journals and snapshots.

Loading: `load_file(store, path)` (one file, all or nothing), `append_events(store, events)` (live).
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
from devtool.store.load import BadLines, LoadResult, load_file

__all__ = [
    "BadLines",
    "BadLinesError",
    "InvalidEventsError",
    "LineProblem",
    "LoadError",
    "LoadResult",
    "NotFoundError",
    "SourceChangedError",
    "Store",
    "StoreError",
    "StoreLockedError",
    "load_file",
]
