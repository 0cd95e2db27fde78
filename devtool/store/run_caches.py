"""What the store keeps of a big run beside its spans (its frame index, its span keys): which runs' is due.

Each is made from the run as it is, records the run's last event then, and is used only while the
run has no newer one; `stale_runs` lists the runs whose is missing or older, for the background
thread that makes them (`devtool.actions.frame_indexer`).
"""

from __future__ import annotations

from typing import Literal

import duckdb

from devtool.store.database import Store
from devtool.store.errors import StoreError


def stale_runs(store: Store, table: Literal["rewind.rewind_runs", "keyed_runs"], *, min_events: int) -> dict[str, int]:
    """Runs of at least `min_events` events whose row in `table` is missing or older than the run:
    their last event id, by trace id (biggest runs first)."""
    try:
        rows = store.query(
            f"""
            SELECT r.trace_id, r.last_event_id FROM runs r LEFT JOIN {table} c USING (trace_id)
            WHERE r.events >= ? AND (c.trace_id IS NULL OR c.last_event_id <> r.last_event_id)
            ORDER BY r.events DESC, r.trace_id
            """,
            [min_events],
        )
    except duckdb.Error as exc:  # the database going away under a background reader, say
        raise StoreError(f"cannot list the runs due in {table}: {exc}") from exc
    return dict(rows)
