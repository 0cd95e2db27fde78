"""Opening the DuckDB file the DevTool keeps everything in, and its schema migrations."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb

# Each entry upgrades the schema by one version; never edit a released one, append.
MIGRATIONS: list[str] = [
    """
    CREATE TABLE events (
        trace_id VARCHAR,
        span_id VARCHAR,
        parent_span_id VARCHAR,
        type VARCHAR NOT NULL,
        ts DOUBLE,
        agent_id VARCHAR,
        body JSON
    );
    """,
]


class StoreError(Exception):
    """Base class of the store's errors; the message says what and where."""


class Store:
    """The server's DuckDB file: one connection that writes, a cursor per reader."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = duckdb.connect(str(path))
        except (OSError, duckdb.Error) as exc:
            raise StoreError(f"cannot open database {path}: {_first_line(exc)}") from exc
        self._write_lock = threading.Lock()
        self._migrate()

    def _migrate(self) -> None:
        with self.writer() as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            rows = conn.execute("SELECT max(version) FROM schema_version").fetchall()
            current = rows[0][0] or 0
            if current > len(MIGRATIONS):
                raise StoreError(
                    f"database {self.path} has schema version {current}, newer than this devtool "
                    f"({len(MIGRATIONS)}): upgrade devtool"
                )
            for version in range(current + 1, len(MIGRATIONS) + 1):
                conn.execute("BEGIN")
                conn.execute(MIGRATIONS[version - 1])
                conn.execute("INSERT INTO schema_version VALUES (?)", [version])
                conn.execute("COMMIT")

    @contextmanager
    def writer(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """The one writing connection, held by one caller at a time."""
        with self._write_lock:
            yield self._conn

    def reader(self) -> duckdb.DuckDBPyConnection:
        """A cursor of its own for one reader (DuckDB cursors are cheap and thread-safe apart)."""
        return self._conn.cursor()

    def query(self, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
        cursor = self.reader()
        try:
            return cursor.execute(sql, params or []).fetchall()
        finally:
            cursor.close()

    def close(self) -> None:
        self._conn.close()


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
