"""Reading rows by a list of ids, up to `PER_STATEMENT` ids a statement: by a scan (`rows_by_ids`), or
by a table's index (`rows_by_key`).

DuckDB runs `col = ANY($ids)` as a hash join; it pushes the ids down into the table scan as a
filter only while they are at most `dynamic_or_filter_threshold`, and otherwise only their minimum
and maximum: past that, the scan fetches every other column of every row in that range (a snapshot
page's 64 nodes by their random ids read all of `snapshot_nodes`' bodies, 0.1-0.4 s at ten million
events). DuckDB's default threshold is 50; the store raises it to `PER_STATEMENT` on its connection
(`database.Store`), so a list is one statement (at ten million events, 200 neighbouring events read
in 4 ms against 16 ms 50 at a time; 100 nodes by id in 5 ms against 8 ms), and a longer one is read
that many at a time (sorted, so that each statement's range is also narrow where the ids are
clustered, as event ids are).

A table with an index on the ids (`snapshot_nodes`' primary key) is read through it instead: with
each id a parameter of its own (`IN (?, ?, ...)`), DuckDB looks them up in the index, and the read no
longer grows with the table (100 nodes of ten million events' store in 5 ms, one in 0.6 ms, where a
scan of every node id takes 7 ms whatever the list).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import duckdb

from devtool.store import list_param

PER_STATEMENT = 1000


def rows_by_ids(cursor: duckdb.DuckDBPyConnection, sql: str, ids: Iterable[Any]) -> list[tuple[Any, ...]]:
    """The rows of `sql` (which filters on `= ANY({ids})`, `{ids}` standing for the list of numbers, its
    only parameter) for all of `ids`."""
    wanted = sorted(set(ids))
    rows: list[tuple[Any, ...]] = []
    for start in range(0, len(wanted), PER_STATEMENT):
        chunk = list_param.values(wanted[start : start + PER_STATEMENT])
        rows.extend(cursor.execute(sql.format(ids=list_param.of("ids", "BIGINT")), {"ids": chunk}).fetchall())
    return rows


def rows_by_key(cursor: duckdb.DuckDBPyConnection, sql: str, ids: Iterable[Any]) -> list[tuple[Any, ...]]:
    """The rows of `sql` (which filters on `IN ({ids})` over an indexed column, `{ids}` standing for
    the list's parameters) for all of `ids`."""
    wanted = sorted(set(ids))
    rows: list[tuple[Any, ...]] = []
    for start in range(0, len(wanted), PER_STATEMENT):
        chunk = wanted[start : start + PER_STATEMENT]
        rows.extend(cursor.execute(sql.format(ids=", ".join("?" * len(chunk))), chunk).fetchall())
    return rows
