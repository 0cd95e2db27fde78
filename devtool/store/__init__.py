"""The DevTool's store: one DuckDB file holding traces, journals and snapshots."""

from __future__ import annotations

from devtool.store.database import Store, StoreError

__all__ = ["Store", "StoreError"]
