"""Printing runs stored before call fingerprints were (an older store): the background indexer's part.

`call_prints` prints each run as it is loaded or appended; a run an older version stored has none,
and a compare reads its events (seconds a million events). The server's background indexer
(`devtool.actions.frame_indexer`) prints such a run whole once it stops growing (`print_run`).
"""

from __future__ import annotations

import duckdb

from devtool.store.call_prints import update
from devtool.store.database import Store
from devtool.store.errors import StoreError
from devtool.store.transactions import unless_raced


def print_run(store: Store, trace_id: str) -> bool:
    """Print run `trace_id` whole (one stored before the fingerprints were), in a transaction of its
    own on a cursor of its own; False when a derive of it wrote meanwhile (the next look prints it)."""

    def work(conn: duckdb.DuckDBPyConnection) -> None:
        conn.execute("CREATE OR REPLACE TEMP TABLE touched_traces AS SELECT ? AS trace_id", [trace_id])
        update(conn, 0)  # every event of a run is after 0: it is printed as a new run is
        conn.execute("DROP TABLE touched_traces")

    return unless_raced(store, work)


def runs_to_print(store: Store, *, min_events: int) -> dict[str, int]:
    """Runs of at least `min_events` events not printed (stored before the fingerprints were): their
    last event id, by trace id (biggest first)."""
    try:
        rows = store.query(
            "SELECT trace_id, last_event_id FROM runs ANTI JOIN printed_runs USING (trace_id) WHERE events >= ? "
            "ORDER BY events DESC, trace_id",
            [min_events],
        )
    except duckdb.Error as exc:  # the database going away under a background reader, say
        raise StoreError(f"cannot list the runs due their call fingerprints: {exc}") from exc
    # A live run whose index step is pending is printed by that step (`Store.index_backlog`), not here.
    return {trace: last for trace, last in rows if not store.unindexed.holds(trace)}
