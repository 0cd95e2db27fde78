"""Live appends: a batch of TraceEvents from a running agent, stored in one transaction.

`store_events(store, events)` appends events the gate checked (`event_gate.py`: a posted batch, a
followed file's lines) through the same SQL as a file load, in the given order; `append_events` is
the same for TraceEvent dicts made in Python, which it takes through the gate first (a bad one is
named by its index, and none of the batch is stored). Both return the new events' ids, in order:
they only grow, so they are what a live stream sends as SSE ids and resumes from (`events_after`).

Spans and run summaries follow in a second step: at once (the default), or, with `derive=False`,
whenever the caller next calls `store.derive_backlog()` (the live appender, which streams the events
first; see `backlog.py`). The events are committed either way.

`store_batch(store, events, derive_small=N)` is the live appender's: it leaves spans to the backlog too,
but a batch of at most N new events that ends the root span of every trace it adds to, none of which a
derive holds (a small trace exported whole, as an OpenTelemetry SDK does when its agent finishes), is
derived in the append's own transaction: its events are in hand, one BEGIN and COMMIT serve both, and
the page an exporter's user opens next waits for no derive (issue 43: a lone trace's header waited
~26 ms for the derive that followed its append, out of ~48 ms from export to visible). Its spans and
summary are computed in Python from the rows the insert returns (`small_derive.py`), and derived in
SQL (`derive.refresh`) when they are not all of a trace's events (a trace with a run already).
A small batch none of whose traces has a run or waits in the backlog has no event stored already
(`stored_spans`), so its insert does not look for them (`event_sql`'s `fresh`: the anti-join was
6.5 of the 16.5 ms a lone trace's append took). A bigger batch's are read first, with the source and
the last id: the keys of its traces' stored events between its first and last time. None (new runs),
and its insert looks for none; at most `STORED_KEYS` (an ingest's batch shares a trace or two with the
one before it), and it looks each event up in their list (`listed`); only past that does it join
them (DuckDB built the anti-join's hash table from the batch, its texts and all).

Events of one live stream are recorded under one `sources` row (kind `live`, named by `stream`), whose
counts grow with every batch.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from devtool.store import derive, list_param, live_index, small_derive
from devtool.store.database import Store
from devtool.store.event_gate import CheckedEvent, check_events
from devtool.store.event_sql import STORED_IN_WINDOW, insert_events_sql

LIVE_KIND = "live"
# The live stream OTLP exports are stored under: a run whose events came by it came from OpenTelemetry.
OTLP_STREAM = "otlp"

# The batch as one list parameter (`list_param`: a JSON array of the texts), numbered in its order:
# ids follow the list.
_BATCH = f"(SELECT body::JSON AS body, n FROM unnest({list_param.of('events')}) WITH ORDINALITY AS batch(body, n))"
# The most stored events a batch that is not small is checked against as a list (`event_sql`'s
# `listed`: each of its events looked up in it); more (a retried group, a long run's events at the same
# times), and it is checked by the anti-join.
STORED_KEYS = 512

logger = logging.getLogger("devtool.store")


@dataclass(frozen=True)
class Stored:
    """What `store_batch` stored: each event's id (None for one stored already), and, when it derived
    them in its own transaction, up to which id every stored event is derived and the traces derived,
    and whether that derive was made in Python (`small_derive`) rather than in SQL."""

    ids: list[int | None]
    derived: tuple[int, tuple[str, ...]] | None = None
    in_python: bool = False


class _DeriveFailed(Exception):
    """The derive in an append's transaction failed (the transaction is rolled back)."""


def append_events(
    store: Store, events: Sequence[Mapping[str, Any]], *, stream: str = "live", derive: bool = True
) -> list[int | None]:
    """Check `events` (TraceEvent dicts) at the gate, append them in order and return their ids (None
    for one stored already); `InvalidEventsError` if any is bad (then none is stored)."""
    return store_events(store, check_events(events), stream=stream, derive=derive)


def store_events(
    store: Store, events: Sequence[CheckedEvent], *, stream: str = "live", derive: bool = True
) -> list[int | None]:
    """Append `events`, checked at the gate already, in order and return their ids.

    Exactly once: an event stored already (by an earlier batch, a file, another stream; see
    `event_sql.EVENT_KEY_SQL`), or given twice in `events`, is stored once, and its place in the
    returned list is None. `derive=False` leaves their spans and run summaries in the store's backlog.
    """
    ids = store_batch(store, events, stream=stream).ids
    if derive and any(i is not None for i in ids):
        store.derive_backlog()
    return ids


def store_batch(store: Store, events: Sequence[CheckedEvent], *, stream: str = "live", derive_small: int = 0) -> Stored:
    """`store_events(..., derive=False)`, but a batch of at most `derive_small` events that ends
    the root span of each trace it adds to, when no derive holds any of them, is derived (spans, run
    summaries, the `unindexed` rows of the index step after it) in the same transaction. Should that
    derive fail, the batch is stored again without it: the events must not be refused for it."""
    try:
        return _store(store, events, stream, derive_small)
    except _DeriveFailed as failed:
        logger.warning("devtool: a small batch's derive failed, its events left to the backlog: %s", failed)
        return _store(store, events, stream, 0)


def _store(store: Store, events: Sequence[CheckedEvent], stream: str, derive_small: int) -> Stored:
    if not events:
        return Stored([])
    # Repeats inside the batch (two retries grouped into one append) go first, then what the store has.
    slot_of: dict[str, int] = {}  # each distinct text's place in `texts`
    firsts: list[int] = []  # the index in `events` of each slot's first event
    for index, event in enumerate(events):
        if slot_of.setdefault(event.text, len(firsts)) == len(firsts):
            firsts.append(index)
    texts = list(slot_of)
    traces = sorted({trace_of(event) for event in events})
    times = [float(event.event["timestamp"]) for event in events]
    derived: dict[str, int] = {}
    in_python = False
    with store.transaction(derives=False) as conn:
        small = len(texts) <= derive_small
        # Asked before the transaction's first statement, where DuckDB takes its snapshot: a derive
        # holds its traces until after it commits, so a trace not held now has its run in the snapshot
        # (and, under the write lock, no append makes one held meanwhile).
        held = {trace for trace in traces if store.backlog.holds(trace)} if small else set()
        window: dict[str, object] = {"traces": list_param.values(traces), "lo": min(times), "hi": max(times)}
        source_id, known, base, runs, stored = _head(conn, stream, window, small)
        # No trace of a small batch has a run or is held: none has events stored (`stored_spans`), so
        # none of the batch is stored already but repeats in it, left out above. A bigger batch is
        # checked against the stored events of its window when they are few (an ingest's batch shares
        # a trace or two with the batch before it), listed: none, nothing is looked for.
        fresh = not runs and not held if small else stored == []
        listed = not small and bool(stored)
        check: dict[str, object] = {} if fresh else {"stored": list_param.values(stored or ())} if listed else window
        params = {"events": list_param.values(texts), "base": base, "source": source_id, **check}
        # The slot of each event stored: its id is `base` + its place in `texts` (from 1).
        written = all(event.written for event in events)
        rows = conn.execute(_insert(written, small, fresh, listed), params).fetchall()
        ids = {row[0] - base - 1: row[0] for row in rows}
        if ids:
            if not known:
                conn.execute(
                    "INSERT INTO sources (source_id, kind, path) VALUES (?, ?, ?)", [source_id, LIVE_KIND, stream]
                )
            conn.execute("UPDATE sources SET events = events + ? WHERE source_id = ?", [len(ids), source_id])
            firsts_of: dict[str, int] = {}  # each trace's first new id
            ending: set[str] = set()
            for slot in sorted(ids):
                checked = events[firsts[slot]]
                trace = trace_of(checked)
                firsts_of.setdefault(trace, ids[slot])
                if _ends_root(checked.event):
                    ending.add(trace)
            if small and ending >= firsts_of.keys() and not held & firsts_of.keys():
                try:
                    # In Python from the rows in hand when they are all of their traces' (none has a
                    # run), else in SQL.
                    in_python = not runs
                    if in_python:
                        small_derive.derive(conn, rows)
                    else:
                        derive.refresh(conn, min(firsts_of.values()) - 1, traces=tuple(firsts_of), prints=False)
                    live_index.mark(conn, firsts_of)
                except Exception as exc:  # DuckDB's, or the Python derive's: the events must still be stored
                    raise _DeriveFailed(f"{type(exc).__name__}: {exc}") from exc
                derived = firsts_of
            else:
                store.backlog.add(firsts_of.items(), ending=ending)
    through = None
    if derived:
        store.unindexed.add(derived.items())
        through = (store.backlog.derived_through(max(ids.values()), derived), tuple(sorted(derived)))
    slots = [slot_of[event.text] for event in events]
    return Stored(
        [ids.get(slot) if firsts[slot] == index else None for index, slot in enumerate(slots)], through, in_python
    )


def stored_spans(store: Store, spans: Iterable[tuple[str, str]]) -> set[tuple[str, str]]:
    """Which of `spans` (trace id, span id) have events stored.

    Read from each trace's first event on: every event of a trace has an id at least its run's
    `first_event_id`, or, when it has no run yet, the backlog's first underived one (a trace with
    neither has no events: a load derives its runs in its own transaction, a live append adds to the
    backlog or derives in its own, a failed derive puts back what it took, and opening a store finds
    what a stopped process left; a small batch's insert relies on it, `_store`); the events' ids
    grow in row groups, so DuckDB reads only those from the earliest of them, not the whole table.
    """
    asked = set(spans)
    traces = sorted({trace for trace, _ in asked})
    if not traces:
        return set()
    # The backlog before the runs: a derive that commits in between has its runs' rows read after.
    pending = {trace: first for trace in traces if (first := store.backlog.first(trace)) is not None}
    firsts = dict(
        store.query(
            f"SELECT trace_id, first_event_id FROM runs WHERE trace_id IN (SELECT unnest({list_param.of('t')}))",
            {"t": list_param.values(traces)},
        )
    )
    for trace, first in pending.items():
        firsts[trace] = min(first, firsts.get(trace, first))
    if not firsts:
        return set()
    rows = store.query(
        "SELECT DISTINCT trace_id, span_id FROM events WHERE event_id >= $lo "
        f"AND trace_id IN (SELECT unnest({list_param.of('traces')})) "
        f"AND span_id IN (SELECT unnest({list_param.of('spans')}))",
        {
            "lo": min(firsts.values()),
            "traces": list_param.values(sorted(firsts)),
            "spans": list_param.values(sorted({span for _, span in asked})),
        },
    )
    return {(str(trace), str(span)) for trace, span in rows} & asked


@functools.cache
def _insert(written: bool, small: bool, fresh: bool, listed: bool) -> str:
    """The batch's INSERT (`insert_events_sql`): of texts all the gate `written`; returning the rows a
    derive in Python is made of (`small_derive.RETURNING`) for a `small` batch, one it may derive;
    not looking for stored events when the batch's traces are `fresh` (none has events stored), or
    only in the keys `listed` (`$stored`)."""
    returning = small_derive.RETURNING if small else ""
    return insert_events_sql(_BATCH, live=True, written=written, returning=returning, fresh=fresh, listed=listed)


def trace_of(event: CheckedEvent) -> str:
    """The event's trace id as the store reads it (`from_json` to VARCHAR): a string as is, anything
    else as its JSON text."""
    trace_id = event.event["trace"]["traceId"]
    return trace_id if isinstance(trace_id, str) else orjson.dumps(trace_id).decode()


def _ends_root(event: Mapping[str, Any]) -> bool:
    """Whether the event ends a root span, as the store reads it (`parent_span_id IS NULL`: no parent
    id, null or empty; a `:end` type)."""
    parent = event["trace"].get("parentSpanId")
    return (parent is None or parent == "") and str(event["type"]).endswith(":end")


def _head(
    conn: Any, stream: str, window: dict[str, object], small: bool
) -> tuple[int, bool, int, bool, list[int] | None]:
    """In one statement (a lone trace's append is its statements): the source id of live stream
    `stream` and whether its row is stored (else the id is new, and its row is added only if the
    batch stores something: a retry alone adds nothing), the highest event id stored, and, for a
    `small` batch, whether a trace of it (`$traces`) has a run already; for another, the keys of the
    stored events in its `window` (`event_sql.STORED_IN_WINDOW`), None when over `STORED_KEYS`."""
    if small:
        asked = f"SELECT count(*) > 0 FROM runs WHERE trace_id IN (SELECT unnest({list_param.of('traces')}))"
    else:
        asked = f"SELECT list(event_key) FROM ({STORED_IN_WINDOW} AND event_key IS NOT NULL LIMIT {STORED_KEYS + 1})"
    source, base, found = conn.execute(
        "SELECT (SELECT source_id FROM sources WHERE kind = $kind AND path = $path AND content_hash IS NULL), "
        f"(SELECT coalesce(max(event_id), 0) FROM events), ({asked})",
        {"kind": LIVE_KIND, "path": stream, **({"traces": window["traces"]} if small else window)},
    ).fetchall()[0]
    runs = small and bool(found)
    stored = None if small or (found is not None and len(found) > STORED_KEYS) else list(found or ())
    known = source is not None
    if not known:
        source = conn.execute("SELECT nextval('source_ids')").fetchall()[0][0]
    return int(source), known, int(base), runs, stored
