"""The lake's background work in a serving DevTool: publish what finished, read the team's runs list,
compact on a schedule.

Every `interval` seconds it publishes the finished runs and the snapshots not yet published (oldest
first, up to `batch` runs per lake transaction: each catalog transaction costs some 0.1 s of round
trips, whatever it holds; a run is in the lake once its transaction's commit returns), then
reads the lake's runs list into `lake_runs`; every `compact_every` seconds (0: never) it compacts the
lake. Before its first round it finishes the copies from the lake a stopped server left half done
(`opening.py`). A failure (the catalog unreachable for a while) is printed once per kind on stderr and tried
again on the next round: nothing is marked published that the lake did not commit.
"""

from __future__ import annotations

import sys
import threading
import time

import duckdb

from devtool.store.database import Store
from devtool.store.errors import StoreError
from devtool.store.lake.attach import Lake
from devtool.store.lake.fetch import refresh_listing
from devtool.store.lake.maintenance import compact
from devtool.store.lake.opening import finish_open, unfinished_opens
from devtool.store.lake.publish import publish_runs, publish_snapshot, unpublished_runs, unpublished_snapshots


class LakeWorker:
    """A thread that keeps a store's lake up to date (`start`, `stop`)."""

    def __init__(
        self, store: Store, lake: Lake, *, interval: float = 1.0, compact_every: float = 3600.0, batch: int = 20
    ) -> None:
        self.store = store
        self.batch = batch
        self.lake = lake
        self.interval = interval
        self.compact_every = compact_every
        self.published = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="devtool-lake", daemon=True)
        self._said: set[str] = set()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=60)

    def round(self) -> int:
        """One round: publish what is waiting, read the runs list; the runs published."""
        done = 0
        while not self._stop.is_set() and (waiting := unpublished_runs(self.store, limit=self.batch)):
            publish_runs(self.store, self.lake, waiting)
            done += len(waiting)
        for snapshot_id in unpublished_snapshots(self.store):
            publish_snapshot(self.store, self.lake, snapshot_id)
        refresh_listing(self.store)
        self.published += done
        return done

    def _loop(self) -> None:
        # Copies from the lake a stopped server left half done (the pages of those runs show what is here).
        for trace_id in unfinished_opens(self.store):
            self._guarded("copy", lambda trace_id=trace_id: finish_open(self.store, self.lake, trace_id))
        last_compact = time.monotonic()
        while not self._stop.is_set():
            self._guarded("publish", self.round)
            if self.compact_every and time.monotonic() - last_compact >= self.compact_every:
                self._guarded("compact", lambda: compact(self.store))
                last_compact = time.monotonic()
            self._stop.wait(self.interval)

    def _guarded(self, what: str, work: object) -> None:
        try:
            work()  # type: ignore[operator]
        except (duckdb.Error, StoreError, OSError) as exc:
            line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            if what not in self._said:
                print(f"devtool: lake {what} failed, trying again: {line}", file=sys.stderr, flush=True)
                self._said.add(what)
        else:
            self._said.discard(what)
