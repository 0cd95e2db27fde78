"""The appender: stores live batches (ingest, `--follow`) with group commit, publishes them in order,
and derives their spans behind them.

Every live batch goes through `await appender.append(events, stream=...)`, its events checked by the
store's gate already (`event_gate.py`). Batches that arrive while an append is running wait and are
then stored together, in arrival order, in one transaction (`store_events`, in a worker thread:
DuckDB never runs on the event loop).

One flush runs at a time, and it publishes each stored group to the broker before storing the next,
so subscribers see events in store order (their ids only grow). The flush is a task of its own: a
request that gives up waiting (its client went away) does not cancel an append other requests wait on.

Storing a batch commits its events only; their spans and run summaries are derived after, by a task
that follows the appends (`Store.derive_backlog`, which costs about the same for ten events as for a
thousand, and grows with the run): under load one derive covers many appends, and an append never
waits for one. Derives start at most once per `derive_interval` (the streams' interval: a page
redraws no more often than that, so deriving more often would only take CPU from the appends), and
a derive that took t seconds is followed by a pause of at least t (`DERIVE_SHARE`): a derive's cost
grows with its run, and without the pause a long run's derives, back to back, would take the cores
the appends need (under OTLP ingest at thousands of spans a second they did, and the appends fell
behind). The events themselves are streamed when stored, so the pause delays only the spans' bars.
Each derive is published too (`Broker.publish_derived`), which is what pages redraw on and what
tells a run's stream that the run is over. `settle()` derives whatever is pending now, for a reader
that must see it (a page request); `settle(trace_id)` only that run's, for a view of one run (under
a big ingest, a derive of everything pending took seconds, and each look at a small run paid it).
The runs' search words and call fingerprints are made after each derive, in a step of their own
(`Store.index_backlog`): a page of a run does not wait for them; `settle()` does. When nothing is left
to derive (a lone small trace, derived with its append; an ingest's last derive), the step waits up to
`INDEX_DELAY` for more to index, or until an append leaves something to derive first: it costs about
the same for one run as for thirty (~60 ms of CPU), and run at once it took a core while the trace's
exporter opened its page, and cost 60% of the server's CPU for each lone small trace (issue 43). Its
readers (a search, a find in a run) do not wait for the delay: they run the step themselves (`settle()`).
A group of at most `SMALL_DERIVE` new events that ends each trace it adds to (a small trace exported
whole) is derived in its own transaction instead (`store_batch`), and that derive is published with it.

Small batches (at most `SMALL_DERIVE` events in all) go ahead of the big ones pending before them, as a
group of their own, when no batch they pass holds events of their traces (each trace's events keep
their order): under an ingest, a small trace then waits for the group being stored only, not also
for a group of the ingest's next batches it would have been stored in (and derived behind: issue 43,
a lone trace's export to visible under a 100,000-span ingest). Groups still store one at a time and
publish in store order, so ids only grow. Small groups and the others take turns, so a stream of
small batches cannot hold back the big ones.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from starlette.concurrency import run_in_threadpool

from devtool.store import Store, store_batch, trace_of
from devtool.store.event_gate import CheckedEvent
from devtool.web.live.broker import Broker, LiveEvent

logger = logging.getLogger("devtool.web")

# The most events stored in one transaction; a group stops growing there.
GROUP_LIMIT = 50_000
# The most of the time a derive following live appends may take (the rest is the appends').
DERIVE_SHARE = 0.5
# The most new events a group may store and derive in one transaction, when it ends each trace it adds
# to: a lone small trace (a six-span agent run is twelve events); an ingest's groups are far bigger.
SMALL_DERIVE = 64
# The longest the index step waits, with nothing left to derive, for more runs to index in one step.
INDEX_DELAY = 1.0


@dataclass
class _Batch:
    events: Sequence[CheckedEvent]
    stream: str
    done: asyncio.Future[list[int | None]] = field(repr=False)

    @functools.cached_property
    def traces(self) -> frozenset[str]:
        return frozenset(map(trace_of, self.events))


class Appender:
    """Stores live batches in order, grouped, and tells the broker about each stored group."""

    def __init__(
        self, store: Store, broker: Broker, *, derive_interval: float = 0.0, index_delay: float = INDEX_DELAY
    ) -> None:
        self.store = store
        self.broker = broker
        self.derive_interval = derive_interval
        self.index_delay = index_delay
        self._wake = _Wake()  # the index step's wait ends: something to derive, or a drain
        self.appends = 0
        self._pending: list[_Batch] = []
        self._flush: asyncio.Task[None] | None = None
        self._derive: asyncio.Task[None] | None = None
        self._derived: list[tuple[int, tuple[str, ...]]] = []  # by the group being stored, to publish

    async def append(self, events: Sequence[CheckedEvent], *, stream: str) -> list[int | None]:
        """Store `events` and return their ids, in order (None for one that was stored already: it is
        neither stored nor published again); raises what the store raised."""
        if not events:
            return []
        batch = _Batch(events, stream, asyncio.get_running_loop().create_future())
        self._pending.append(batch)
        if self._flush is None or self._flush.done():
            self._flush = asyncio.create_task(self._run(), name="devtool-live-append")
        return await asyncio.shield(batch.done)

    async def drain(self) -> None:
        """Wait until every batch handed in so far is stored (or has failed), and derived."""
        while self._flush is not None and not self._flush.done():
            await asyncio.shield(self._flush)
        self._wake.set()
        if self._derive is not None and not self._derive.done():
            await asyncio.shield(self._derive)
        await self.settle()

    async def settle(self, only: str | None = None, *, behind: bool = False) -> None:
        """Derive the spans and run summaries of every event stored so far (of trace `only`'s, when
        given: what a page of that run must show; `behind`: what no derive in flight holds, for the
        derive that follows the appends), and publish that."""
        store = self.store
        if not store.backlog and (only is not None or behind or not store.unindexed):
            return
        derived = await run_in_threadpool(functools.partial(store.derive_backlog, only, behind=behind))
        if derived is not None:
            self.broker.publish_derived(*derived)
        if store.unindexed and (self._derive is None or self._derive.done()):
            # A run derived alone (a page of it) is indexed behind it, as the appends' derives are.
            self._derive = asyncio.create_task(self._follow(), name="devtool-live-derive")

    async def _follow(self) -> None:
        """Derive behind the appends while they come: one derive at a time, each covering all that is
        pending and followed by the index step of the runs derived (`Store.index_backlog`), one at
        most every `derive_interval` seconds, and none for as long as the last took; with nothing left
        to derive, the index step waits (`_index_due`)."""
        due: float | None = None  # when the index step pending runs at the latest
        while self.store.backlog or self.store.unindexed:
            started = time.monotonic()
            try:
                await self.settle(behind=True)
                due = due if due is not None else started + self.index_delay
                if await self._index_due(due):
                    # The runs' words and call fingerprints, after the derive that made them visible.
                    await run_in_threadpool(self.store.index_backlog)
                    due = None
            except Exception:  # the events are stored; the next append or page request derives again
                logger.exception("devtool: could not derive the spans of live events")
                return
            now = time.monotonic()
            await asyncio.sleep(max(0.0, next_derive(started, now, self.derive_interval) - now))

    async def _index_due(self, due: float) -> bool:
        """Whether the index step is to run now: at once while more is left to derive (an ingest's
        derives go on, each followed by it), else once `due` comes or a drain asks; False when an
        append left something to derive before that (it is derived first)."""
        if self.store.backlog or not self.store.unindexed:
            return True
        await self._wake.wait(max(0.0, due - time.monotonic()))
        return not self.store.backlog or time.monotonic() >= due

    async def _run(self) -> None:
        small_first = True
        while self._pending:
            group, small_first = _take_group(self._pending, small_first=small_first)
            results = await self._store(group)
            stored: list[LiveEvent] = []
            for batch, result in zip(group, results, strict=True):
                if isinstance(result, Exception):
                    logger.warning("devtool: could not store a live batch of %d events: %s", len(batch.events), result)
                    batch.done.set_exception(result)
                    # Its request may be gone (the client gave up): then nobody reads the error, and
                    # asyncio would log it as never retrieved; it is logged above already.
                    batch.done.add_done_callback(_retrieve)
                    continue
                batch.done.set_result(result)
                stored.extend(
                    LiveEvent.of(i, e.event) for i, e in zip(result, batch.events, strict=True) if i is not None
                )
            self.broker.publish(stored)
            if self.store.backlog:
                self._wake.set()  # a derive is due: the index step waiting lets it go first
            for derived in self._derived:
                self.broker.publish_derived(*derived)
            self._derived.clear()
            if self._derive is None or self._derive.done():
                self._derive = asyncio.create_task(self._follow(), name="devtool-live-derive")

    async def _store(self, group: list[_Batch]) -> list[list[int | None] | Exception]:
        """Each batch's ids, or the error that kept it out: one transaction per stream when all goes well."""
        results: list[list[int | None] | Exception] = []
        index = 0
        while index < len(group):
            end = index
            while end < len(group) and group[end].stream == group[index].stream:
                end += 1
            run = group[index:end]
            outcome = await self._store_one([e for batch in run for e in batch.events], run[0].stream)
            if isinstance(outcome, Exception) and len(run) > 1:
                # One bad batch must not sink the others grouped with it: store them one by one.
                results.extend([await self._store_one(batch.events, batch.stream) for batch in run])
            elif isinstance(outcome, Exception):
                results.append(outcome)
            else:
                for batch in run:
                    results.append(outcome[: len(batch.events)])
                    outcome = outcome[len(batch.events) :]
            index = end
        return results

    async def _store_one(self, events: Sequence[CheckedEvent], stream: str) -> list[int | None] | Exception:
        try:
            stored = await run_in_threadpool(store_batch, self.store, events, stream=stream, derive_small=SMALL_DERIVE)
        except Exception as exc:  # whatever the store raised must reach the waiting requests, not hang them
            return exc
        self.appends += 1
        if stored.derived is not None:
            self._derived.append(stored.derived)
        return stored.ids


class _Wake:
    """What the index step waits on (`set` by an append that left something to derive, or a drain),
    on whichever event loop it runs: an `asyncio.Event` is bound to the first loop that waits on it,
    and an app driven from another loop after that (a second test client, `asyncio.run` again) had
    each index step fail ("could not derive") and left to the next append. One waiter at a time (the
    index step); `set` may come from another thread than the waiting loop's.

    `set` marks, then looks for a waiter; `wait` shows its waiter, then looks at the mark: whichever
    comes second sees the other's, so a `set` from another thread as a wait begins either wakes the
    waiter or keeps it from waiting (it once waited out its timeout). `set` costs no more for it."""

    def __init__(self) -> None:
        self._set = False
        self._waiter: asyncio.Future[None] | None = None

    def set(self) -> None:
        self._set = True
        waiter = self._waiter
        if waiter is not None and not waiter.get_loop().is_closed():
            waiter.get_loop().call_soon_threadsafe(_wake_up, waiter)

    async def wait(self, timeout: float) -> None:
        """Until set, or for `timeout` seconds; cleared after."""
        if not self._set:
            self._waiter = waiter = asyncio.get_running_loop().create_future()
            try:
                if not self._set:  # set before the waiter was there to be woken
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(waiter, timeout)
            finally:
                self._waiter = None
        self._set = False


def _wake_up(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


def next_derive(started: float, ended: float, interval: float) -> float:
    """When the derive after one that ran from `started` to `ended` may start: an `interval` after the
    last began, and late enough that derives take at most `DERIVE_SHARE` of the time."""
    return max(started + interval, started + (ended - started) / DERIVE_SHARE)


def _take_group(pending: list[_Batch], *, small_first: bool) -> tuple[list[_Batch], bool]:
    """The next group to store, taken out of `pending`, and whether small batches may go first next
    time: when `small_first`, the small batches that may pass the big ones pending (`_passing`), else
    the batches from the first on, up to `GROUP_LIMIT` events."""
    if small_first and (small := _passing(pending)):
        taken = set(map(id, small))
        pending[:] = [batch for batch in pending if id(batch) not in taken]
        return small, False
    group: list[_Batch] = []
    size = 0
    for batch in pending:
        if group and size + len(batch.events) > GROUP_LIMIT:
            break
        group.append(batch)
        size += len(batch.events)
    del pending[: len(group)]
    return group, True


def _passing(pending: list[_Batch]) -> list[_Batch]:
    """The small batches of `pending`, at most `SMALL_DERIVE` events in all and in their order, that no
    batch before them and left behind shares a trace with; none when no big batch is pending (then
    they are stored with the batches around them, as they come)."""
    if all(len(batch.events) <= SMALL_DERIVE for batch in pending):
        return []
    small: list[_Batch] = []
    passed: list[_Batch] = []
    room = SMALL_DERIVE
    for batch in pending:
        if len(batch.events) <= room and all(other.traces.isdisjoint(batch.traces) for other in passed):
            small.append(batch)
            room -= len(batch.events)
        else:
            passed.append(batch)
    return small


def _retrieve(future: asyncio.Future[list[int | None]]) -> None:
    if not future.cancelled():
        future.exception()
