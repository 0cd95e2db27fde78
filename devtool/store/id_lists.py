"""Reading rows by a list of ids, a few dozen ids a statement.

DuckDB runs `col = ANY($ids)` as a hash join; it pushes the ids down into the table scan as a
filter only while they are at most `dynamic_or_filter_threshold` (50), and otherwise only their
minimum and maximum. Past that, the scan fetches every other column of every row in that range: a
snapshot page's 64 nodes by their (random) ids read all of `snapshot_nodes`' bodies, 0.1-0.4 s at
ten million events against 3 ms for 50. So lists are read `PER_STATEMENT` ids at a time (sorted, so
that each statement's range is also narrow where the ids are clustered, as event ids are).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import duckdb

PER_STATEMENT = 50


def rows_by_ids(cursor: duckdb.DuckDBPyConnection, sql: str, ids: Iterable[Any]) -> list[tuple[Any, ...]]:
    """The rows of `sql` (which filters on `= ANY($ids)`, its only parameter) for all of `ids`."""
    wanted = sorted(set(ids))
    rows: list[tuple[Any, ...]] = []
    for start in range(0, len(wanted), PER_STATEMENT):
        rows.extend(cursor.execute(sql, {"ids": wanted[start : start + PER_STATEMENT]}).fetchall())
    return rows
