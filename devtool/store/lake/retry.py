"""A lake transaction, tried again when the catalog refuses its commit because another DevTool
committed a conflicting change meanwhile (DuckLake's optimistic concurrency: two publishers deleting
the same run's rows, two servers making the tables at once)."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from contextlib import closing
from typing import TypeVar

import duckdb

from devtool.store.database import Store
from devtool.store.transactions import rollback

T = TypeVar("T")

ATTEMPTS = 12


def conflicted(exc: duckdb.Error) -> bool:
    """Whether `exc` is a commit another transaction won (worth trying again), not a real failure."""
    text = str(exc).lower()
    return isinstance(exc, duckdb.TransactionException) or "conflict" in text or "concurrent" in text


def in_lake_transaction(store: Store, work: Callable[[duckdb.DuckDBPyConnection], T]) -> T:
    """`work(conn)` inside BEGIN … COMMIT on a cursor of its own, tried again (after a random wait that
    grows) while the commit conflicts with another's, at most `ATTEMPTS` times."""
    for attempt in range(ATTEMPTS):
        with closing(store.reader()) as conn:
            conn.execute("BEGIN TRANSACTION")
            try:
                result = work(conn)
                conn.execute("COMMIT")
                return result
            except duckdb.Error as exc:
                rollback(conn)
                if not conflicted(exc) or attempt == ATTEMPTS - 1:
                    raise
            except BaseException:
                rollback(conn)
                raise
        # Random, so that two publishers that conflicted do not meet again (not a secret: S311 is moot).
        time.sleep(random.uniform(0.01, 0.05) * 2 ** min(attempt, 6))  # noqa: S311
    raise AssertionError("unreachable")
