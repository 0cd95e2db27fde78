"""Keeping the lake's files few and its history short, with DuckLake's own maintenance calls.

Each publish writes small Parquet files (a run's events, spans, words): `compact` merges adjacent
small files into larger ones (`ducklake_merge_adjacent_files`), then expires the catalog's snapshots
older than `keep` and deletes the files only those referenced (`ducklake_expire_snapshots`,
`ducklake_cleanup_old_files`). A DevTool serving a lake runs it on a schedule
(`devtool serve --lake-compact-every`), and `devtool publish --compact` runs it at once. It is safe beside
publishers: a merge that conflicts with a commit is tried again (`retry.py`); files a reader may still
read are kept for `keep`.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from devtool.store.database import Store
from devtool.store.lake.attach import ALIAS
from devtool.store.lake.retry import in_lake_transaction

DEFAULT_KEEP = "1 hour"


@dataclass(frozen=True, slots=True)
class Compacted:
    """What one compaction did: the files it merged and made, the old files it deleted."""

    merged: int
    created: int
    deleted: int


def compact(store: Store, *, keep: str = DEFAULT_KEEP) -> Compacted:
    """Merge the lake's small files and drop what only snapshots older than `keep` used."""

    def merge(conn: duckdb.DuckDBPyConnection) -> tuple[int, int]:
        rows = conn.execute(f"CALL ducklake_merge_adjacent_files('{ALIAS}')").fetchall()
        return sum(int(row[2]) for row in rows), sum(int(row[3]) for row in rows)

    merged, created = in_lake_transaction(store, merge)

    def expire(conn: duckdb.DuckDBPyConnection) -> int:
        older = "older_than => now() - INTERVAL (?)"
        conn.execute(f"CALL ducklake_expire_snapshots('{ALIAS}', {older})", [keep]).fetchall()
        return len(conn.execute(f"CALL ducklake_cleanup_old_files('{ALIAS}', {older})", [keep]).fetchall())

    deleted = in_lake_transaction(store, expire)
    return Compacted(merged, created, deleted)
