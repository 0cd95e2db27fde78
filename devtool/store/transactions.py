"""Ending a store transaction: its COMMIT with what to undo if it fails, its ROLLBACK, and a write
beside the writer that gives way to a conflicting one."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from typing import TYPE_CHECKING

import duckdb

from devtool.store.backlog import Backlog

if TYPE_CHECKING:
    from devtool.store.database import Store


@contextmanager
def committed(conn: duckdb.DuckDBPyConnection, backlog: Backlog, taken: dict[str, int]) -> Iterator[None]:
    """COMMIT the transaction `conn` began when the block ends; on any error, roll it back and put
    what it took from `backlog` back."""
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        rollback(conn)
        backlog.put_back(taken)
        raise


def unless_raced(store: Store, work: Callable[[duckdb.DuckDBPyConnection], None]) -> bool:
    """Do `work` in a transaction of a reader's cursor, beside the writer; False when a write to the
    same rows committed meanwhile (DuckDB's conflict: nothing of `work` is kept, the next look redoes it)."""
    with closing(store.reader()) as conn:
        conn.execute("BEGIN TRANSACTION")
        try:
            work(conn)
            conn.execute("COMMIT")
        except duckdb.TransactionException:
            rollback(conn)
            return False
        except BaseException:
            rollback(conn)
            raise
    return True


def rollback(conn: duckdb.DuckDBPyConnection) -> None:
    """End the transaction open on `conn`, if any: a COMMIT that failed (a full disk) ended it already,
    and a ROLLBACK then would only raise over the error that matters."""
    with contextlib.suppress(duckdb.TransactionException):
        conn.execute("ROLLBACK")
