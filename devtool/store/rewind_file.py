"""The store's second DuckDB file, `<file>.rewind`: its snapshots and the frame indexes of big runs.

It is attached to the store's connection as `rewind` (its tables: `schema_rewind.py`), so a statement
reads both files at once. Why a file of its own: DuckDB checkpoints a database under a lock that every
commit to that database waits for, whatever it writes, and the checkpoints of a big run's rewind
index are long: at ten million events, two or three of each build took 2-11 s while the index's
nodes went into the file, and every live append to another run waited them out. Attached as a file
of its own, the index's checkpoints are that file's: they hold up the index's own commits and a
snapshot saved meanwhile, and the events' commits go on (`BENCHMARKS.md`, issue 21).

The file is attached with row groups of `ROW_GROUP_SIZE` rows, not DuckDB's 122,880: a checkpoint
rewrites the last row group of a table that grew, and reads all of it back to do so; a row group of
`snapshot_nodes` at DuckDB's size is up to 300 MiB of node bodies, which each of a build's checkpoints
read back, and which DuckDB kept in memory as it filled. At 8,192 rows a checkpoint rewrites at most
~20 MiB, and what a build holds in DuckDB's memory besides its cache of the file is a few MiB
(`BENCHMARKS.md`, issue 43). The size applies to the row groups written from then on.

DuckDB lets one transaction write to one of the attached files only, so what is written together
lives in the same file: a snapshot with its nodes, an index with its nodes, which snapshots share.

The two files are one store. The rewind file holds a random id that the main file keeps as well, and
a store is opened only with its own: a rewind file missing beside a store that has one (copied
without it, say), another store's, or one left beside a new database is refused with an error that
says which, and nothing is created or changed in its place: a link to a snapshot must open that
snapshot or say why not.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from devtool.store.errors import StoreError
from devtool.store.schema import REWIND_FILE_AT
from devtool.store.schema_rewind import MIGRATIONS

ALIAS = "rewind"
ROW_GROUP_SIZE = 8192  # rows a row group of the rewind file's tables (DuckDB's default: 122,880)


def rewind_path(path: Path) -> Path:
    """The rewind file of the store at `path`."""
    return path.with_name(f"{path.name}.rewind")


def wal_path(database: Path) -> Path:
    """Where DuckDB keeps the WAL of the database file `database`."""
    return database.with_name(f"{database.name}.wal")


def store_files(path: Path) -> tuple[Path, ...]:
    """Every file of the store at `path` (each may not exist): the two databases and their WALs."""
    rewind = rewind_path(path)
    return (path, wal_path(path), rewind, wal_path(rewind))


def check_present(path: Path, *, main_version: int) -> None:
    """Refuse the store at `path`, whose main file is at schema `main_version`, when its rewind file is
    missing or one lies beside a new database: before anything is written to either."""
    rewind = rewind_path(path)
    if main_version == 0 and rewind.exists():
        raise StoreError(
            f"{rewind} lies beside the new database {path}: it holds another store's snapshots; move it "
            "away, or open the database it belongs to"
        )
    if main_version >= REWIND_FILE_AT and not rewind.exists():
        raise StoreError(
            f"database {path} keeps its snapshots and rewind indexes in {rewind}, which is missing: put it "
            f"back beside {path.name} (a store is both files; copy them together)"
        )


def attach(conn: duckdb.DuckDBPyConnection, path: Path, *, main_version: int) -> None:
    """Attach the rewind file of the store at `path`, whose main file is at schema `main_version`
    (`check_present` passed), and take it to its latest schema (its first migration copies the
    snapshots from the main file)."""
    rewind = rewind_path(path)
    quoted = str(rewind).replace("'", "''")
    try:
        conn.execute(f"ATTACH '{quoted}' AS {ALIAS} (ROW_GROUP_SIZE {ROW_GROUP_SIZE})")
    except duckdb.Error as exc:
        raise StoreError(f"cannot open {rewind}, the snapshots of {path}: {exc}") from exc
    current = _version(conn)
    if main_version >= REWIND_FILE_AT and current == 0:
        raise _not_its_own(path, rewind)
    if current > len(MIGRATIONS):
        raise StoreError(
            f"{rewind} has schema version {current}, newer than this devtool ({len(MIGRATIONS)}): upgrade devtool"
        )
    for version in range(current + 1, len(MIGRATIONS) + 1):
        conn.execute("BEGIN")
        conn.execute(f"CREATE TABLE IF NOT EXISTS {ALIAS}.schema_version (version INTEGER NOT NULL)")
        conn.execute(MIGRATIONS[version - 1])
        conn.execute(f"INSERT INTO {ALIAS}.schema_version VALUES (?)", [version])
        conn.execute("COMMIT")
    if main_version >= REWIND_FILE_AT:
        _check_pair(conn, path, rewind)


def _version(conn: duckdb.DuckDBPyConnection) -> int:
    """The attached rewind file's schema version; 0 for a file without one (new), which is left unwritten."""
    tables = conn.execute(
        "SELECT 1 FROM duckdb_tables() WHERE database_name = ? AND table_name = 'schema_version'", [ALIAS]
    ).fetchall()
    if not tables:
        return 0
    return int(conn.execute(f"SELECT max(version) FROM {ALIAS}.schema_version").fetchall()[0][0] or 0)


def _check_pair(conn: duckdb.DuckDBPyConnection, path: Path, rewind: Path) -> None:
    [(ours,)] = conn.execute("SELECT file_id FROM rewind_file").fetchall()
    if conn.execute(f"SELECT file_id FROM {ALIAS}.rewind_file").fetchall() != [(ours,)]:
        raise _not_its_own(path, rewind)


def _not_its_own(path: Path, rewind: Path) -> StoreError:
    return StoreError(
        f"{rewind} is not the rewind file of {path} (it belongs to another store, or is new): put "
        f"{path.name}'s own back beside it"
    )
