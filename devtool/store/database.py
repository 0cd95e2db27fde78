"""Opening the DuckDB file the DevTool keeps everything in: one writer, a cursor per reader.

DuckDB lets one process open a file for writing. Inside that process, `Store` keeps one connection
for writes, handed to one caller at a time (`writer()`, `transaction()`), and gives every reader a
cursor of its own (`reader()`, `query()`): DuckDB's MVCC lets readers see the last committed state
while a load runs, so nobody waits and nobody gets "database is locked".

Two exceptions to one writer run on cursors of their own, beside the appends. Deriving the spans and
run summaries of live appends (`derive_backlog`, see `backlog.py`) holds the derive lock, which every
other transaction that derives (a load) takes first, before the write lock: the same order
everywhere, so the two never wait on each other in a circle. A writer of many rows that no other
transaction writes (the rewind index's batches) writes them in a transaction `beside` the writer,
which takes the write lock for its COMMIT only: live appends wait for a commit, not for the inserts.

A store is two DuckDB files on one connection: `<file>`, and `<file>.rewind` attached as `rewind`
with the snapshots and the rewind indexes (`rewind_file.py` says why, and how the two are kept a pair).

Committed writes stay in memory (and in the WAL, `<file>.wal`) until a checkpoint writes them into the
file, which DuckDB makes itself once the WAL reaches `CHECKPOINT_THRESHOLD`, inside whichever commit
crosses that: often a live append's, which then waits for it, as every other commit does meanwhile.
DuckDB's own threshold, 16 MiB, is under two seconds of OTLP ingest at 10,000 spans/s: in 15 s of it,
7 to 11 live appends took 50 to 480 ms to commit, where at 128 MiB 1 to 3 did, and the appends
meanwhile waited less (BENCHMARKS.md, issue 16). What waits in memory stays well inside
`memory_limit`, and a store that was not closed replays 120 MiB of WAL as it opens in half a second.
A writer of many rows (the rewind index) checkpoints its file itself when its commits have grown that
file's WAL (`wal_bytes`, `checkpoint`), so what waits in memory stays small and a commit rarely pays
for a checkpoint.

DuckDB may use `memory_limit` of memory (1 GiB by default, and less in `devtool serve`; it spills
what does not fit to a folder beside the file, `<file>.tmp`): its own default, most of the machine's
memory, would let a load of ten million events or a server's cache grow to gigabytes beside the
other programs on the machine.
The connection also lets DuckDB push a join's keys into a table scan up to `id_lists.PER_STATEMENT`
of them (its default is 50), so that rows read by a list of ids read only those. Its allocator
(jemalloc) gives freed pages back to the system from a background thread: without it, pages freed by
one thread's statements wait for that thread's next allocations, and a process that reads a big run
held a few hundred MiB more than DuckDB used.
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import closing, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from devtool.store import derive, live_index, no_pandas, rewind_file
from devtool.store.backlog import PENDING, Backlog
from devtool.store.errors import StoreError, StoreLockedError, disk_full, first_line
from devtool.store.id_lists import PER_STATEMENT
from devtool.store.rewind_file import rewind_path, wal_path
from devtool.store.schema import MIGRATIONS, REWIND_FILE_AT, UNINDEXED_AT
from devtool.store.transactions import committed, rollback

if TYPE_CHECKING:
    from devtool.store.lake import Lake

_LOCK_HOLDER = re.compile(r"\(PID (\d+)\)")


DEFAULT_MEMORY_LIMIT = "1GiB"
# The WAL a commit may leave before DuckDB checkpoints inside it (its own default is 16 MiB).
CHECKPOINT_THRESHOLD = "128MiB"


class Store:
    """The server's DuckDB file: one connection that writes, a cursor per reader."""

    def __init__(self, path: Path, *, memory_limit: str = DEFAULT_MEMORY_LIMIT) -> None:
        no_pandas.skip_lookups()
        self.path = path
        # The team's lake, when one is attached (`devtool.store.lake.attach_lake`).
        self.lake: Lake | None = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = duckdb.connect(
                str(path),
                config={
                    "memory_limit": memory_limit,
                    "dynamic_or_filter_threshold": PER_STATEMENT,
                    "allocator_background_threads": True,
                    "checkpoint_threshold": CHECKPOINT_THRESHOLD,
                    # New files in 1.5's own storage format: the default (1.0's, for older readers) has
                    # no ZSTD for strings and so keeps the events' JSON bodies uncompressed.
                    "storage_compatibility_version": "latest",
                },
            )
        except (OSError, duckdb.Error) as exc:
            if (full := disk_full(path, exc)) is not None:
                raise full from exc
            if "lock" in str(exc).lower():
                holder = _LOCK_HOLDER.search(str(exc))
                who = f" (pid {holder.group(1)})" if holder else ""
                raise StoreLockedError(
                    f"database {path} is open in another process{who}, and DuckDB lets one process at a "
                    "time write a file: stop that process, or use another database file"
                ) from exc
            if "created with an newer version of DuckDB" in str(exc):
                # DevTool moved from DuckDB 2.0 to 1.5 for the lake's extensions: a 2.0 file is unreadable here.
                raise StoreError(
                    f"database {path} was written by a newer DuckDB than this DevTool's {duckdb.__version__} "
                    "(DevTool releases before the team lake ran DuckDB 2.0): use another --db and load the "
                    "trace files again, or export the runs with the DevTool that wrote it (devtool export)"
                ) from exc
            raise StoreError(f"cannot open database {path}: {first_line(exc)}") from exc
        self.memory_limit = memory_limit
        self._write_lock = threading.Lock()
        self._derive_lock = threading.Lock()
        # Held by a derive of everything pending that a reader waits for, and by a derive of one run
        # (`derive_backlog`): one of them at a time, beside the derive that follows the appends.
        self._alone_lock = threading.Lock()
        self._beside_lock = threading.Lock()
        # Held by the index step of live runs (`index_backlog`), and by a transaction that derives (a
        # load, which writes the same tables), after the derive lock.
        self._index_lock = threading.Lock()
        self.backlog = Backlog()
        # The runs a live derive made visible whose words and call fingerprints are not made yet.
        self.unindexed = Backlog()
        # No query progress (DuckDB's Python client turns it on for a connection it opens): tracked, it is
        # polled on every statement (0.7% of an OTLP ingest's CPU), and only a load's bar shows it
        # (`showing_progress`). DuckDB's own printing of it stays off.
        self._conn.execute("SET enable_progress_bar = false; SET enable_progress_bar_print = false")
        try:
            self._migrate()
            with self.writer() as conn:
                self.backlog.add(conn.execute(PENDING).fetchall())
                if len(MIGRATIONS) >= UNINDEXED_AT:  # else a test's older schema
                    self.unindexed.add(conn.execute(live_index.PENDING).fetchall())
            # What a server killed mid-append left underived; writing it needs the disk already.
            self.derive_backlog()
        except BaseException as exc:
            self._conn.close()
            if (full := disk_full(path, exc)) is not None:
                raise full from exc
            raise

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
            rewind_file.check_present(self.path, main_version=current)
            # The main file's tables up to the rewind file, which copies some of them, then the rest.
            _apply(conn, range(current + 1, min(REWIND_FILE_AT, len(MIGRATIONS) + 1)))
            rewind_file.attach(conn, self.path, main_version=current)
            _apply(conn, range(max(current + 1, REWIND_FILE_AT), len(MIGRATIONS) + 1))
            if current < len(MIGRATIONS):
                # Migrations left in the write-ahead log of a process killed before its first checkpoint
                # fail DuckDB 1.5.5's replay ("GetDefaultDatabase with no default database set"): the
                # new schema is written to the files at once.
                conn.execute("CHECKPOINT; CHECKPOINT rewind")

    @property
    def schema_version(self) -> int:
        return int(self.query("SELECT max(version) FROM schema_version")[0][0])

    @contextmanager
    def writer(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """The one writing connection, held by one caller at a time."""
        with self._write_lock:
            yield self._conn

    @contextmanager
    def transaction(self, *, derives: bool = True) -> Iterator[duckdb.DuckDBPyConnection]:
        """The writing connection inside BEGIN … COMMIT; any exception rolls everything back.

        `derives=False` promises that the transaction writes no spans or runs of a trace a derive may
        hold (a live append, which leaves them to `derive_backlog`, or derives a small trace no derive
        holds, `live_append.store_batch`): it then does not wait for a derive in flight.
        """
        with contextlib.ExitStack() as held:
            for lock in (self._derive_lock, self._index_lock) if derives else ():
                held.enter_context(lock)  # before the write lock, as everywhere
            conn = held.enter_context(self.writer())
            conn.execute("BEGIN TRANSACTION")
            try:
                yield conn
            except BaseException:
                rollback(conn)
                # A statement that failed while it had the insertion order off (`event_sql.insert_events`)
                # left it off: an aborted transaction refuses the RESET that would have followed.
                conn.execute("RESET preserve_insertion_order")
                raise
            conn.execute("COMMIT")

    @contextmanager
    def beside(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A transaction on a cursor of its own, beside the writing connection's, that takes the write
        lock for its COMMIT only; any exception rolls it back.

        For inserts that other writers do not make, or make as `ON CONFLICT DO NOTHING` (a node the
        index and a rewind both store): a writer's transaction, under the write lock throughout, never
        sees this one commit meanwhile, so where the two added the same key it is this commit that
        fails (`duckdb.TransactionException`), and the caller may try again.
        """
        with self._beside_lock, closing(self._conn.cursor()) as conn:
            conn.execute("BEGIN TRANSACTION")
            try:
                yield conn
                with self._write_lock:
                    conn.execute("COMMIT")
            except BaseException:
                rollback(conn)
                raise

    def checkpoint(self, *, rewind: bool = False) -> None:
        """Write what is committed into the main file (the rewind file: `rewind`) and empty its WAL;
        nothing while another transaction has writes in flight to it (DuckDB refuses it then; its own
        checkpoint at `CHECKPOINT_THRESHOLD` of WAL remains)."""
        with closing(self._conn.cursor()) as conn, contextlib.suppress(duckdb.TransactionException):
            conn.execute(f"CHECKPOINT {rewind_file.ALIAS}" if rewind else "CHECKPOINT")

    @contextmanager
    def memory_held(self, limit: str) -> Iterator[None]:
        """DuckDB held to `limit` (when it is under the store's `memory_limit`) until the block ends, for
        every statement of the process: DuckDB's limit is one for its whole instance."""
        if size_bytes(limit) >= size_bytes(self.memory_limit):
            yield
            return
        with closing(self._conn.cursor()) as conn:
            conn.execute(f"SET memory_limit = '{size_bytes(limit)}B'")
            try:
                yield
            finally:
                conn.execute(f"SET memory_limit = '{size_bytes(self.memory_limit)}B'")

    def wal_bytes(self, *, rewind: bool = False) -> int:
        """The size of the main file's WAL (the rewind file's: `rewind`): what is committed to it and
        not yet checkpointed."""
        try:
            return wal_path(rewind_path(self.path) if rewind else self.path).stat().st_size
        except FileNotFoundError:
            return 0

    def derive_backlog(self, only: str | None = None, *, behind: bool = False) -> tuple[int, tuple[str, ...]] | None:
        """Derive the spans and run summaries of what live appends left in the backlog, in one
        transaction, and then index them (`index_backlog`); return the id up to which every stored
        event is now derived and the traces derived, or None when there was nothing left to derive.
        What was pending when called is derived and indexed when it returns (derives in flight are
        waited for), but:

        - `only`: the events of that trace alone (a page of that run need not wait for the others).
          While another derive runs, which does not hold the trace, it is derived beside it, on a
          cursor of its own: their runs differ, so their writes do not meet (a load that wrote the
          same run meanwhile makes its COMMIT fail; it is then derived after that load).
        - `behind`: the derive that follows the appends; it takes what no derive in flight holds,
          and waits for no derive of one run.

        Neither of those indexes: the caller does (`index_backlog`), so that what waits for the
        derive of a run, its page, does not wait for its words too.
        """
        derived = self._derive_backlog(only, behind=behind) if self.backlog else None
        if only is None and not behind:
            self.index_backlog()
        return derived

    def _derive_backlog(self, only: str | None, *, behind: bool) -> tuple[int, tuple[str, ...]] | None:
        if behind:
            with self._derive_lock:
                return self._derive(None)
        with self._alone_lock:
            if only is not None and self.backlog.takeable(only) and self._derive_lock.locked():
                with contextlib.suppress(duckdb.TransactionException):
                    if (derived := self._derive(only)) is not None:
                        return derived
            with self._derive_lock:
                return self._derive(only)

    def _derive(self, only: str | None) -> tuple[int, tuple[str, ...]] | None:
        """`derive_backlog`'s transaction: take the backlog (or trace `only`'s), derive it, commit."""
        with closing(self._conn.cursor()) as conn:
            # Taken and begun under the write lock: the transaction sees exactly the appends taken.
            with self._write_lock:
                conn.execute("BEGIN TRANSACTION")
                newest = int(conn.execute("SELECT coalesce(max(event_id), 0) FROM events").fetchall()[0][0])
                taken = self.backlog.take(only=only)
                if not taken:
                    rollback(conn)
                    return None
                through = self.backlog.derived_through(newest, taken)
            with committed(conn, self.backlog, taken):
                after = min(taken.values()) - 1
                _, traces = derive.refresh(conn, after, traces=tuple(taken), prints=False)
                live_index.mark(conn, taken)
            self.unindexed.add(taken.items())  # before `done`: a reader sees it in one or the other
            self.backlog.done(taken)
            return through, traces

    def index_backlog(self) -> bool:
        """Make the search words and call fingerprints of the runs live derives left to index
        (`live_index`), in one transaction; False when there was none. Waits for an index step in
        flight, so what was left to index when called is indexed when it returns."""
        if not self.unindexed:
            return False
        with self._index_lock, closing(self._conn.cursor()) as conn:
            # Taken before BEGIN: a derive adds its runs here after its COMMIT, which BEGIN then sees.
            taken = self.unindexed.take()
            if not taken:
                return False
            conn.execute("BEGIN TRANSACTION")
            with committed(conn, self.unindexed, taken):
                live_index.index(conn, taken)
            self.unindexed.done(taken)
            return True

    @contextmanager
    def showing_progress(self) -> Iterator[None]:
        """The writer's statements tracked for `progress` while inside (a load whose bar shows it)."""
        with self.writer() as conn:
            conn.execute("SET enable_progress_bar = true")
        try:
            yield
        finally:
            with self.writer() as conn:
                conn.execute("SET enable_progress_bar = false")

    def progress(self) -> float:
        """How far the writer's running statement is, 0-100, or -1 when none is running (or it is not
        tracked: outside `showing_progress`)."""
        return float(self._conn.query_progress())

    def reader(self) -> duckdb.DuckDBPyConnection:
        """A cursor of its own for one reader (DuckDB cursors are cheap and thread-safe apart)."""
        return self._conn.cursor()

    def query(self, sql: str, params: Sequence[Any] | Mapping[str, Any] | None = None) -> list[tuple[Any, ...]]:
        """Run one read-only statement on a fresh cursor and return all its rows."""
        with closing(self.reader()) as cursor:
            return cursor.execute(sql, params if params is not None else []).fetchall()

    def close(self) -> None:
        """Close the file, after the derive or write in flight (what is left pending, opening derives)."""
        with self._beside_lock, self._alone_lock, self._derive_lock, self._index_lock, self._write_lock:
            self._conn.close()


def _apply(conn: duckdb.DuckDBPyConnection, versions: range) -> None:
    """Take the main file through migrations `versions`, each in a transaction with its version."""
    for version in versions:
        conn.execute("BEGIN")
        conn.execute(MIGRATIONS[version - 1])
        conn.execute("INSERT INTO schema_version VALUES (?)", [version])
        conn.execute("COMMIT")


_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]i?b|b|bytes)?\s*", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "bytes": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}  # fmt: skip


def size_bytes(size: str) -> int:
    """Bytes of a memory size as DuckDB's `memory_limit` takes it ("640MiB", "1GB", "2.5 GiB");
    `ValueError` for another form."""
    found = _SIZE.fullmatch(size)
    if found is None:
        raise ValueError(f"not a memory size: {size!r} (e.g. 512MiB, 4GiB)")
    return int(float(found.group(1)) * _UNITS[(found.group(2) or "").lower()])
