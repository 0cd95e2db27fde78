"""The derive backlog: events a live append stored whose spans and run summaries are not derived yet.

A live append commits its events at once and leaves their spans and run summary to the next derive
(`Store.derive_backlog`), so a stream can send the events the moment they are stored: a derive
re-reads the spans it touches and the whole run's summary, and grows with the run (tens of
milliseconds at tens of thousands of events), while storing a batch does not. The derive runs on a
cursor of its own, beside the appends that follow: they write `events`, it writes `spans` and `runs`,
so DuckDB's MVCC lets both commit.

The backlog is, per trace, the first event id not derived yet. An append adds to it inside its own
transaction, under the store's write lock; a derive takes all of it (or one trace of it: a page of
that run, `take(only=...)`) under the same lock, at the moment its transaction starts, so what it
takes is exactly what it sees. Until that derive commits, the traces it took are `in_flight`: a
reader asking whether a run is derived waits for both.

A derive of one trace leaves the others pending, so "every event up to N is derived" (what a derive
publishes, and what a runs stream resumes from) is then not the newest id but the lowest first id
still pending, less one (`derived_through`). A trace derived alone and then given more events is
pending again from its first new one: nothing is derived twice or skipped.

Nothing here is durable, and need not be: a process that stops between an append and its derive
leaves events newer than their run's `last_event_id` (or a trace with no run at all), and opening the
store finds them (`PENDING`) and derives them.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

# The events of each trace that its run summary does not cover yet: what a stopped process left.
PENDING = """
    SELECT e.trace_id, min(e.event_id) FROM events e LEFT JOIN runs r USING (trace_id)
    WHERE r.last_event_id IS NULL OR e.event_id > r.last_event_id
    GROUP BY e.trace_id
"""


class Backlog:
    """Traces with stored, underived events, each with its first such event id."""

    def __init__(self) -> None:
        self._pending: dict[str, int] = {}
        self._in_flight: dict[str, int] = {}
        # Of those, the traces whose underived events end a root span: their runs may have finished.
        self._ending: set[str] = set()
        self._ending_in_flight: frozenset[str] = frozenset()
        # Guards the two fields for readers that hold none of the store's locks (a stream's check).
        self._lock = threading.Lock()

    def __bool__(self) -> bool:
        """Whether anything stored is not derived yet (pending, or being derived)."""
        return bool(self._pending or self._in_flight)

    def add(self, firsts: Iterable[tuple[str, int]], *, ending: Iterable[str] = ()) -> None:
        """Record appended events: `(trace_id, first event id)` pairs, and the traces among them whose
        new events end a root span (`ending`)."""
        with self._lock:
            for trace_id, first in firsts:
                if trace_id not in self._pending or first < self._pending[trace_id]:
                    self._pending[trace_id] = first
            self._ending.update(ending)

    def take(self, *, only: str | None = None) -> dict[str, int]:
        """Everything pending (or trace `only`'s, if pending), now in flight: the caller derives it,
        then calls `done` (or `put_back`)."""
        with self._lock:
            if only is None:
                taken, self._pending = self._pending, {}
                ending, self._ending = frozenset(self._ending), set()
            else:
                taken = {only: self._pending.pop(only)} if only in self._pending else {}
                ending = frozenset(self._ending & {only})
                self._ending.discard(only)
            self._in_flight, self._ending_in_flight = dict(taken), ending
            return taken

    def derived_through(self, newest: int) -> int:
        """Up to which id every stored event is derived once the derive in flight commits, when
        `newest` is the newest id stored: below the first id of every trace still pending."""
        with self._lock:
            return min([newest, *(first - 1 for first in self._pending.values())])

    def done(self) -> None:
        with self._lock:
            self._in_flight, self._ending_in_flight = {}, frozenset()

    def put_back(self, taken: dict[str, int]) -> None:
        """A derive failed: what it took is pending again."""
        with self._lock:
            ending = self._ending_in_flight
            self._in_flight, self._ending_in_flight = {}, frozenset()
        self.add(taken.items(), ending=ending)

    def holds(self, trace_id: str) -> bool:
        """Whether some stored events of `trace_id` are not derived yet (pending or being derived)."""
        with self._lock:
            return trace_id in self._pending or trace_id in self._in_flight

    def first(self, trace_id: str) -> int | None:
        """The first event id of `trace_id` not derived yet (pending or being derived), or None."""
        with self._lock:
            found = [ids[trace_id] for ids in (self._pending, self._in_flight) if trace_id in ids]
            return min(found) if found else None

    def ends_root(self, trace_id: str) -> bool:
        """Whether the events of `trace_id` not derived yet end a root span (its run may be over)."""
        with self._lock:
            return trace_id in self._ending or trace_id in self._ending_in_flight
