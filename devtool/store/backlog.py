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
still pending or in flight in another derive, less one (`derived_through`). A trace derived alone
and then given more events is pending again from its first new one: nothing is derived twice or
skipped. A derive of one trace may run beside the derive that follows the appends (two in flight):
no derive takes a trace the other holds, so each run has one derive at a time.

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
        # Taken by derives that have not committed yet (at most two at once: `Store.derive_backlog`);
        # what one takes is pending when it takes it, so no trace is in two.
        self._in_flight: dict[str, int] = {}
        # Of those, the traces whose underived events end a root span: their runs may have finished.
        self._ending: set[str] = set()
        self._ending_in_flight: set[str] = set()
        # Guards the fields for readers that hold none of the store's locks (a stream's check).
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
        then calls `done` (or `put_back`) with it."""
        with self._lock:
            # A trace a derive in flight holds waits for it: two derives of one run would not see
            # each other's spans.
            wanted = self._pending.keys() if only is None else {only} & self._pending.keys()
            taken = {trace: self._pending.pop(trace) for trace in list(wanted) if trace not in self._in_flight}
            ending = self._ending & taken.keys()
            self._ending -= ending
            self._in_flight.update(taken)
            self._ending_in_flight |= ending
            return taken

    def derived_through(self, newest: int, taken: dict[str, int]) -> int:
        """Up to which id every stored event is derived once the derive that took `taken` commits, when
        `newest` is the newest id stored: below the first id of every other trace pending or in flight."""
        with self._lock:
            held = (*self._pending.items(), *self._in_flight.items())
            return min([newest, *(first - 1 for trace, first in held if trace not in taken)])

    def done(self, taken: dict[str, int]) -> None:
        """The derive that took `taken` committed."""
        with self._lock:
            for trace_id in taken:
                self._in_flight.pop(trace_id, None)
                self._ending_in_flight.discard(trace_id)

    def put_back(self, taken: dict[str, int]) -> None:
        """The derive that took `taken` failed: it is pending again."""
        with self._lock:
            ending = self._ending_in_flight & taken.keys()
        self.done(taken)
        self.add(taken.items(), ending=ending)

    def takeable(self, trace_id: str) -> bool:
        """Whether `take(only=trace_id)` would take something: its events wait, and no derive holds it."""
        with self._lock:
            return trace_id in self._pending and trace_id not in self._in_flight

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
