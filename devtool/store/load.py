"""Loading one file into the store: detect its format, hash it, bulk-load it in one transaction.

`load_file(store, path)` is all or nothing. The file is loaded by its format's loader through DuckDB's
JSON reader while a thread reads it for its SHA-256; spans, run summaries and the `sources` row are
written in the same transaction, which rolls back if the content turns out to be stored already (a
file loaded twice adds nothing; a file that overlaps one loaded before adds only the events the store
does not have, see `event_sql.EVENT_KEY_SQL`), if anything fails, or if the file changed while it loaded: the store
is then exactly as it was. A file stored before under the same path, size and modification time is
hashed first, so loading it again costs one read.

When DuckDB refuses the file, a scan names the bad lines. With `BadLines.REJECT` (the default) the
load fails with the first of them in its message (`BadLinesError.problems` has them all, up to a
thousand). With `BadLines.SKIP` the good lines are loaded and the result lists the bad ones.
"""

from __future__ import annotations

import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path

import duckdb

from devtool.store import span_keys_build
from devtool.store.database import Store
from devtool.store.errors import BadLinesError, LineProblem, LoadError, first_line
from devtool.store.files import SourceFile
from devtool.store.loaders import Loader, Reading, detect
from devtool.store.loaders.journals import JournalJsonl
from devtool.store.scan import BOM, MAX_LINE, Scan
from devtool.store.unpack import gunzipped, is_gzip, renamed

# (phase, done, total): "reading" counts bytes hashed; "loading" DuckDB's progress, scaled to bytes.
Progress = Callable[[str, int, int], None]

DEFAULT_OBJECT_SIZE = 16 << 20


class BadLines(StrEnum):
    """What to do with a file that has bad lines: refuse it whole, or load its good lines."""

    REJECT = "reject"
    SKIP = "skip"


@dataclass(frozen=True, slots=True)
class LoadResult:
    """What loading one file did. `already_loaded`: its content was in the store, nothing was added."""

    path: Path
    kind: str
    content_hash: str
    bytes: int
    source_id: int
    already_loaded: bool = False
    events: int = 0
    spans: int = 0
    traces: tuple[str, ...] = ()
    journal_entries: int = 0
    processes: tuple[str, ...] = ()
    problems: tuple[LineProblem, ...] = ()
    bad_lines: int = 0

    @property
    def journal(self) -> bool:
        """Whether the file was a process journal (what it added is `journal_entries`); every other
        format (TraceEvents, OTLP spans) adds events, spans and traces."""
        return self.kind == JournalJsonl.kind

    def held(self) -> str:
        """What of the file the store holds, counted: its events, else its journal entries (what an
        `already_loaded` file is said to be)."""
        if self.events:
            return counted(self.events, "event")
        return counted(self.journal_entries, "journal entry", "journal entries")


def counted(n: int, one: str, many: str | None = None) -> str:
    """`1 event`, `82 events`, `1,204 journal entries`: a count with its noun, as load reports say it."""
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


def load_file(
    store: Store,
    path: Path | str,
    *,
    bad_lines: BadLines = BadLines.REJECT,
    progress: Progress | None = None,
    keys: bool = True,
) -> LoadResult:
    """Load a trace or journal file (or one gzip-compressed); raise `LoadError` (nothing stored) when
    it cannot be. `keys=False`: do not key the big runs it leaves (`span_keys_build.key_runs`, a pass over
    each whole run), for a caller that loads a run in parts and keys it once at the end."""
    path = Path(path)
    if is_gzip(path):
        with gunzipped(path) as plain:
            try:
                return replace(load_file(store, plain, bad_lines=bad_lines, progress=progress, keys=keys), path=path)
            except LoadError as exc:
                raise renamed(exc, path) from None
    reading = None if progress is None else lambda done, total: progress("reading", done, total)
    with SourceFile(path) as source:
        loader = detect(source)
        if _seen_before(store, source):
            # Most likely loaded already (the same file, unchanged): hash it before doing anything else.
            source.digest(reading)
            known = _known(store, source)
            if known is not None:
                return known
        else:
            # A new file: hash it alongside the load; only the commit needs the hash.
            source.start_digest(reading)
        refusal: BaseException
        try:
            return _insert(store, source, loader, source.reader_path, jsonl=False, progress=progress, keys=keys)
        except (duckdb.Error, _TooLong) as exc:
            refusal = exc
        except _AlreadyLoaded as known:
            return known.result
        source.wait_digest()
        if DEFAULT_OBJECT_SIZE < source.longest_line <= MAX_LINE and not isinstance(refusal, _TooLong):
            # The digest found a line longer than DuckDB was told to expect: read again, told.
            try:
                return _insert(store, source, loader, source.reader_path, jsonl=False, progress=progress, keys=keys)
            except duckdb.Error as exc:
                refusal = exc
            except _AlreadyLoaded as known:
                return known.result
        # DuckDB 1.5's JSON reader refuses a file that begins with a byte order mark: the scan's copy has none.
        bom = source.head.startswith(BOM)
        with tempfile.TemporaryDirectory(prefix="devtool-load-") as folder:
            good_path = Path(folder) / "good.jsonl"
            with good_path.open("wb") as good:
                scan = loader.scan(source.stream(), good if bad_lines is BadLines.SKIP or bom else None)
            if scan.bad == 0 and not (bom and scan.good):
                raise LoadError(path, f"DuckDB cannot read it as {loader.description}: {first_line(refusal)}")
            if scan.bad and (bad_lines is BadLines.REJECT or scan.good == 0):
                raise BadLinesError(path, tuple(scan.problems), scan.bad, scan.good)
            try:
                return _insert(
                    store, source, loader, str(good_path), jsonl=True, progress=progress, scan=scan, keys=keys
                )
            except duckdb.Error as exc:
                raise LoadError(path, f"DuckDB cannot read its good lines: {first_line(exc)}") from exc
            except _AlreadyLoaded as known:
                return known.result


class _TooLong(Exception):
    """Raised inside a load's transaction (to roll it back) when the digest found a line over the limit."""


class _AlreadyLoaded(Exception):
    """Raised inside a load's transaction (to roll it back) when its content turns out to be stored."""

    def __init__(self, result: LoadResult) -> None:
        super().__init__(result.path)
        self.result = result


def _seen_before(store: Store, source: SourceFile) -> bool:
    rows = store.query(
        "SELECT 1 FROM sources WHERE path = ? AND bytes = ? AND modified_ns = ? LIMIT 1",
        [str(source.path.absolute()), source.size, source.modified_ns],
    )
    return bool(rows)


def _known(store: Store, source: SourceFile) -> LoadResult | None:
    rows = store.query(
        "SELECT source_id, kind, events, journal_entries, bad_lines FROM sources WHERE content_hash = ?",
        [source.content_hash],
    )
    if not rows:
        return None
    source_id, kind, events, entries, bad = rows[0]
    return LoadResult(
        source.path, kind, source.content_hash, source.size, source_id, True, events, 0, (), entries, (), (), bad
    )


def _insert(
    store: Store,
    source: SourceFile,
    loader: Loader,
    reader_path: str,
    *,
    jsonl: bool,
    progress: Progress | None,
    scan: Scan | None = None,
    keys: bool = True,
) -> LoadResult:
    # The longest line is known once the digest is done; until then, DuckDB's default will do, or
    # its refusal sends load_file to wait for the digest and try again.
    object_size = min(max(DEFAULT_OBJECT_SIZE, source.longest_line + 1024), MAX_LINE + 1024)
    reading = Reading(jsonl, object_size)
    with _watch(store, source, progress), _memory_refused(source), store.transaction() as conn:
        source_id = int(conn.execute("SELECT nextval('source_ids')").fetchall()[0][0])
        inserted = loader.insert(conn, reader_path, source_id, reading)
        if keys:
            span_keys_build.key_runs(conn, inserted.traces, min_events=span_keys_build.LOAD_KEYED_EVENTS)
        source.wait_digest()
        if not reading.jsonl and source.longest_line > MAX_LINE:
            raise _TooLong(f"a line over {MAX_LINE >> 20} MiB")
        known = _known(store, source)  # the same content under another name, or loaded meanwhile
        if known is not None:
            raise _AlreadyLoaded(known)
        if inserted.events == 0 and not inserted.processes:
            # Its events were read (a file without any is refused before), and every one of them is
            # in the store already: a part of a file loaded before, say. Nothing is added.
            # Its bad lines are still news to whoever asked to skip them.
            raise _AlreadyLoaded(
                LoadResult(
                    source.path,
                    loader.kind,
                    source.content_hash,
                    source.size,
                    0,
                    True,
                    problems=tuple(scan.problems) if scan else (),
                    bad_lines=scan.bad if scan else 0,
                )
            )
        source.check_unchanged()
        conn.execute(
            "INSERT INTO sources (source_id, kind, path, content_hash, bytes, modified_ns, events, journal_entries, "
            "bad_lines) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                source_id,
                loader.kind,
                str(source.path.absolute()),
                source.content_hash,
                source.size,
                source.modified_ns,
                inserted.events,
                inserted.journal_entries,
                scan.bad if scan else 0,
            ],
        )
    return LoadResult(
        source.path,
        loader.kind,
        source.content_hash,
        source.size,
        source_id,
        events=inserted.events,
        spans=inserted.spans,
        traces=inserted.traces,
        journal_entries=inserted.journal_entries,
        processes=inserted.processes,
        problems=tuple(scan.problems) if scan else (),
        bad_lines=scan.bad if scan else 0,
    )


@contextmanager
def _memory_refused(source: SourceFile) -> Iterator[None]:
    """A load that DuckDB could not fit in its memory limit is refused as that, at once (after the
    transaction's rollback): it says nothing of the file, whose lines would otherwise be scanned one
    by one for a fault they do not have, and then reported as unreadable."""
    try:
        yield
    except duckdb.OutOfMemoryException as exc:
        raise LoadError(
            source.path,
            f"DuckDB ran out of memory loading it, so nothing of it was stored ({first_line(exc)}): "
            "let it use more with --memory-limit (say 2GiB), or load it on a machine with more memory",
        ) from exc


@contextmanager
def _watch(store: Store, source: SourceFile, progress: Progress | None) -> Iterator[None]:
    """Report DuckDB's progress on the running load every tenth of a second, once the digest's
    "reading" is done (both read the file at once; one bar shows one phase at a time)."""
    if progress is None:
        yield
        return
    done = threading.Event()
    size = source.size

    def poll() -> None:
        while not done.wait(0.1):
            percent = store.progress()
            if percent >= 0 and source.content_hash:
                progress("loading", int(size * min(percent, 100.0) / 100), size)

    watcher = threading.Thread(target=poll, name="devtool-load-progress", daemon=True)
    watcher.start()
    try:
        with store.showing_progress():
            yield
    finally:
        done.set()
        watcher.join()
        progress("loading", size, size)
