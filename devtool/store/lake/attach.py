"""Attaching a DuckLake beside the store: on the store's own connection, as `devtool_lake` (`ALIAS`),
so one statement reads the local file and the lake (a publish reads local rows and writes the lake's; an open the
reverse), each transaction writing one of the two, as DuckDB requires.

The extensions come from their PyPI packages (`store.extensions`): ducklake, and postgres for a
PostgreSQL catalog, httpfs for S3 data. The lake's tables are made on first attach by whichever
DevTool comes first (`tables.LAKE_TABLES`; several starting at once retry on the catalog's conflict),
with the row group size of its events' Parquet files (`tables.EVENTS_ROW_GROUP`).
"""

from __future__ import annotations

from contextlib import closing
from dataclasses import dataclass

import duckdb

from devtool.store.database import Store
from devtool.store.errors import first_line
from devtool.store.extensions import load_extension
from devtool.store.lake.config import POSTGRES, LakeConfig, LakeError, shown
from devtool.store.lake.retry import in_lake_transaction
from devtool.store.lake.s3 import make_secret
from devtool.store.lake.tables import EVENTS_ROW_GROUP, LAKE_TABLES, LAKE_VERSION, LOCAL_TABLES

# Not `lake`: DuckDB names a file's own database after the file, and a store may be `lake.duckdb`.
ALIAS = "devtool_lake"


@dataclass(frozen=True, slots=True)
class Lake:
    """A lake attached to a store: its checked configuration."""

    config: LakeConfig

    @property
    def node(self) -> str:
        return self.config.node


def attach_lake(store: Store, config: LakeConfig) -> Lake:
    """Attach the lake `config` names to `store` (`store.lake` is then set); `LakeError` in one line
    when it cannot be (a catalog that does not answer, a data path it cannot use)."""
    with store.writer() as conn:
        load_extension(conn, "ducklake")
        if config.catalog.startswith(POSTGRES):
            load_extension(conn, "postgres")
        if config.remote_data:
            load_extension(conn, "httpfs")
        if config.s3 is not None:
            make_secret(conn, config.s3)
        try:
            conn.execute(
                f"ATTACH '{_quoted('ducklake:' + config.catalog)}' AS {ALIAS} (DATA_PATH '{_quoted(config.data)}')"
            )
        except duckdb.Error as exc:
            # DuckDB's message repeats the connection string, password and all.
            raise LakeError(f"cannot open the lake catalog {config.shown!r}: {shown(first_line(exc))}") from None
        conn.execute(LOCAL_TABLES)
    try:
        in_lake_transaction(store, _make_tables)
        # A transaction of its own: DuckLake sets no option on a table made in the same transaction.
        in_lake_transaction(store, _size_row_groups)
    except duckdb.Error as exc:
        raise LakeError(f"cannot make the lake's tables in {config.shown!r}: {first_line(exc)}") from None
    lake = Lake(config)
    store.lake = lake
    return lake


def _make_tables(conn: duckdb.DuckDBPyConnection) -> None:
    conn.execute(LAKE_TABLES)
    if not conn.execute("SELECT 1 FROM devtool_lake.publish_turn").fetchall():
        conn.execute("INSERT INTO devtool_lake.publish_turn VALUES (0)")
    (found,) = conn.execute("SELECT max(version) FROM devtool_lake.lake_version").fetchone() or (None,)
    if found is None:
        conn.execute("INSERT INTO devtool_lake.lake_version VALUES (?)", [LAKE_VERSION])
    elif found > LAKE_VERSION:
        raise LakeError(f"the lake's tables are version {found}, newer than this devtool's ({LAKE_VERSION}): upgrade")


def detach_lake(store: Store) -> None:
    """Detach the store's lake, if any (before the store closes: its catalog connections end)."""
    if store.lake is None:
        return
    store.lake = None
    with store.writer() as conn, closing(conn.cursor()) as cursor:
        cursor.execute(f"DETACH {ALIAS}")


def _size_row_groups(conn: duckdb.DuckDBPyConnection) -> None:
    # Read first: a write per attach would be a catalog commit (and a conflict) at each server's start.
    # A lake made before the option keeps the row groups of the runs it holds (they read as before).
    sized = f"SELECT value FROM {ALIAS}.options() WHERE option_name = 'parquet_row_group_size' AND scope_entry = ?"
    if conn.execute(sized, ["main.events"]).fetchall() != [(str(EVENTS_ROW_GROUP),)]:
        conn.execute(f"CALL {ALIAS}.set_option('parquet_row_group_size', {EVENTS_ROW_GROUP}, table_name => 'events')")


def _quoted(text: str) -> str:
    return text.replace("'", "''")
