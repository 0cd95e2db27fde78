"""Frame indexes of big runs: building one (`build_index`), and the server's thread that builds them
(and the span keys that find a big run's spans without scanning them, `devtool.store.span_keys`).

`build_index` walks a run once (`devtool.core.frame_index.index_stream`, in a child process of its
own at a lower priority: `devtool.actions.index_walker`), reading its events a range of ids at a
time, and stores what the walk hands over as it goes, a batch at a time under a new build number,
which the run's row names at the end (`devtool.store.frame_index_tables`), or records why the run
cannot be indexed. Neither the walk nor the writes hold the run: memory and write-lock holds are
those of a batch, and the server's threads do not wait for the walk's GIL. `FrameIndexer` is the
server's background thread: a run of at least `Settings.rewind_index_events` events is indexed once
it has stopped growing: its last event is the same at two looks `rewind_index_interval` s apart, so
a live run is not indexed again at every batch. Indexing a run of a million events takes about
twenty seconds of one core, on the cores the server leaves idle; until its index is ready (or after
the run grows again), a rewind of the run walks its events instead, and makes the same snapshot,
slower. One run at a time, never more than one thread: the machine's cores are for the pages. A run
that stopped growing also has its failures read once (`devtool.store.queries.cause`, kept while the
run stays as it is), so its page's first view does not wait for them, and one stored before call
fingerprints were is printed (`devtool.store.print_older`), so its first compare does not
read its events.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Final

from devtool.actions.index_walker import walk_apart
from devtool.core.frame_index_records import DUPLICATE_CALL_ID, NotIndexable
from devtool.core.restore import IGNORED_TYPES, UNREAD_FIELDS
from devtool.store import Store, StoreError, print_older, span_keys_build
from devtool.store.frame_index_tables import (
    BatchWriter,
    IndexState,
    duplicate_call_id,
    finish_index,
    last_event_of,
    new_build,
    runs_to_index,
)
from devtool.store.queries.cause import run_faults
from devtool.store.queries.events import iter_run_bodies

logger = logging.getLogger("devtool.actions")


# DuckDB's memory while an index is built (when the store's limit is higher). Of what the build holds
# there, only the nodes' key index (an ART, ~80 MiB at ten million events) cannot leave memory: the
# rest is DuckDB's cache of the blocks it reads and writes, and rows not yet checkpointed, which
# DuckDB writes to its temporary file when held lower. At ten million events the cache took the
# server's 640 MiB and then the 400 MiB it was held to here, with the build no faster (issue 43).
BUILD_MEMORY_LIMIT: Final = "300MiB"


def build_index(store: Store, trace_id: str) -> IndexState:
    """Index run `trace_id` as it is now (replacing an older index); `NotFoundError` if no such run.
    A run that cannot be indexed gets a row saying why, so it is not tried again until it grows.
    DuckDB is held to `BUILD_MEMORY_LIMIT` meanwhile."""
    with store.memory_held(BUILD_MEMORY_LIMIT):
        return _build(store, trace_id)


def _build(store: Store, trace_id: str) -> IndexState:
    began = time.perf_counter()
    last_event_id = last_event_of(store, trace_id)
    build = new_build(store)
    writer = BatchWriter(store, trace_id, build)
    events, reason = 0, None
    try:
        chunks = iter_run_bodies(store, trace_id, skip_types=IGNORED_TYPES, drop_fields=UNREAD_FIELDS, by_id=True)
        events = walk_apart(chunks, writer)
        duplicate = duplicate_call_id(store, trace_id, build)
        if duplicate is not None:
            raise NotIndexable(DUPLICATE_CALL_ID.format(call_id=duplicate[:80]))
    except NotIndexable as exc:
        reason = str(exc)
    return finish_index(
        store, trace_id, build, last_event_id, events=events, frames=writer.frames, reason=reason, began=began
    )


class FrameIndexer:
    """Indexes the store's big runs in the background between `start()` and `stop()`."""

    def __init__(self, store: Store, *, min_events: int, interval: float) -> None:
        self.store = store
        self.min_events = min_events
        self.interval = interval
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._stopping.clear()
        self._thread = threading.Thread(target=self._run, name="devtool-frame-indexer", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop looking for runs; a build under way is left to finish (it commits or rolls back)."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)
            self._thread = None

    def _run(self) -> None:
        seen: dict[str, int] = {}
        failed: dict[str, int] = {}  # runs whose index could not be built, tried again once they grow
        while not self._stopping.is_set():
            try:
                to_key = span_keys_build.runs_to_key(self.store, min_events=self.min_events)
                to_index = runs_to_index(self.store, min_events=self.min_events)
            except StoreError as exc:
                logger.warning("devtool: frame indexer: %s", exc)
                to_key, to_index = {}, {}
            to_print = self._to_print()
            due = {**to_key, **to_index, **to_print}
            for trace_id, last_event_id in due.items():
                if self._stopping.is_set():
                    return
                if seen.get(trace_id) != last_event_id or failed.get(trace_id) == last_event_id:
                    continue  # still growing, or failed as it is
                # The keys first: seconds, and every page of the run is faster once they are there.
                if trace_id in to_key:
                    self._key(trace_id, last_event_id, failed)
                self._warm(trace_id)
                if trace_id in to_print:
                    self._print(trace_id, last_event_id, failed)
                if trace_id in to_index:
                    self._index(trace_id, last_event_id, failed)
            seen = due
            self._stopping.wait(self.interval)

    def _key(self, trace_id: str, last_event_id: int, failed: dict[str, int]) -> None:
        try:
            span_keys_build.key_run(self.store, trace_id)
        except Exception:  # a bug or a store error here must stop neither the server nor other runs
            failed[trace_id] = last_event_id
            if not self._stopping.is_set():
                logger.exception("devtool: span keys of run %s failed", trace_id)

    def _to_print(self) -> dict[str, int]:
        """Runs stored before call fingerprints were (an older store): printed here, so their first
        compare does not read their events."""
        try:
            return print_older.runs_to_print(self.store, min_events=self.min_events)
        except StoreError as exc:
            logger.warning("devtool: frame indexer: %s", exc)
            return {}

    def _print(self, trace_id: str, last_event_id: int, failed: dict[str, int]) -> None:
        try:
            print_older.print_run(self.store, trace_id)
        except Exception:  # a bug or a store error here must stop neither the server nor other runs
            failed[trace_id] = last_event_id
            if not self._stopping.is_set():
                logger.exception("devtool: call fingerprints of run %s failed", trace_id)

    def _warm(self, trace_id: str) -> None:
        """Read the run's failures once (`queries.cause`, kept while the run stays as it is), so the first
        view of a big run's page does not wait for it (1.3 s at ten million events)."""
        try:
            run_faults(self.store, trace_id)
        except Exception:  # a bug or a store error here must stop neither the server nor other runs
            if not self._stopping.is_set():
                logger.exception("devtool: failures of run %s could not be read", trace_id)

    def _index(self, trace_id: str, last_event_id: int, failed: dict[str, int]) -> None:
        try:
            state = build_index(self.store, trace_id)
        except Exception:  # a bug or a store error here must stop neither the server nor other runs
            failed[trace_id] = last_event_id
            if not self._stopping.is_set():
                logger.exception("devtool: frame index of run %s failed", trace_id)
            return
        logger.info(
            "devtool: frame index of run %s: %s in %.1f s",
            trace_id,
            f"{state.frames} frames" if state.indexed else f"not indexed ({state.reason})",
            state.seconds,
        )
