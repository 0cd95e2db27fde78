"""Opening a run only the lake holds: its head first, so its page answers at once, the rest after.

`open_run(store, lake, trace)` copies the whole run (its events, then its journal entries and
snapshots) before it returns: what `devtool load --lake` does. A page cannot wait for that (a
million-event run is a load of its file, a minute or more), so the web asks in two steps:
`open_head` notes the run in `lake_opening` (the cut and the lake's count) and copies the run's first
`HEAD` events in the publisher's order (a top-N on the lake's event ids, no sort of the texts): two
reads of the lake and a load of a few thousand events; the page is made from that. `finish_open` then
copies the events after the cut, the lake's `copy_chunk` at a time (a load of a run already stored
derives only what the new events touch, and these loads do not key the run: it is keyed once, at the
end, so a chunk costs its own events), the run's journal entries and snapshots, drops the note and
marks the run published (its events are the lake's). A link to a span not copied yet first copies that
span's events and its ancestors' (`open_span`, read by their times, `lineage.py`), so the link opens
on it; it goes first: the copy of the rest waits before its next chunk while a span's copy is asked
for, so a link waits for one chunk at most. Ranges may overlap: the exactly-once keys store an event once.

A server killed while copying finds the note on restart and finishes (`unfinished_opens`); a run being
opened is never published back.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace

from devtool.store import span_keys_build
from devtool.store.database import Store
from devtool.store.lake.attach import Lake
from devtool.store.lake.fetch import copy_events, copy_journal, copy_run_snapshots, in_lake
from devtool.store.lake.lineage import copy_lineage
from devtool.store.lake.publish import mark_published
from devtool.store.load import LoadResult

# Enough for a run's first screen (its root, its first frames), few enough to load in a fraction of a
# second; a run of at most this many events is copied whole at once.
HEAD = 2_000

# The last event id of the next `$n` events after `$after` (the publisher's order), and how many there are.
_CUT = """
    SELECT max(event_id), count(*) FROM (
        SELECT event_id FROM devtool_lake.events WHERE trace_id = $trace AND event_id > $after
        ORDER BY event_id LIMIT $n
    )
"""

# The run's count as the lake lists it (None: not listed), and the cut of its first `$n` events.
_HEAD = f"""
    SELECT (SELECT events FROM devtool_lake.runs WHERE trace_id = $trace ORDER BY published_at DESC LIMIT 1), *
    FROM ({_CUT})
"""

# Runs whose rest a thread of this process is copying now: one copy a run.
_finishing: set[str] = set()
_finishing_lock = threading.Lock()
# Span copies asked for by pages and not done, by run: the rest's copy waits for them before its next chunk.
_asked: dict[str, int] = {}
_asked_changed = threading.Condition()


@dataclass(frozen=True, slots=True)
class Opening:
    """A lake run copied in part: the events stored here and the lake's count of them (the run's status
    is the lake's meanwhile: `queries.get_run`)."""

    trace_id: str
    local: int
    total: int

    @property
    def percent(self) -> int:
        """How much of the run is here, in whole percent (99 until it is all here)."""
        return min(99, self.local * 100 // max(self.total, 1))


def open_run(store: Store, lake: Lake, trace_id: str) -> LoadResult | None:
    """Copy run `trace_id` from the lake into the store, whole (None: the lake has no such run); loading
    it again adds nothing."""
    if not in_lake(store, trace_id):
        return None
    result = copy_events(store, lake, trace_id)
    _copy_rest_of_run(store, lake, trace_id)
    _done(store, trace_id)
    return replace(result, path=result.path.with_name(f"lake:{trace_id}"))


def open_head(store: Store, lake: Lake, trace_id: str, *, head: int = HEAD) -> Opening | None:
    """Copy the first `head` events of run `trace_id` (all of a run that has no more, with its journal
    entries and snapshots); what is still to copy (`finish_open`), or None when the lake has no such
    run or the run is now whole here."""
    # The lake's count from its runs row (the publisher's count, its events once each: no scan), read
    # with the head's cut in one statement: each statement on the lake pays its catalog round trips.
    total, cut, counted = store.query(_HEAD, {"trace": trace_id, "after": -1, "n": head})[0]
    if total is None:
        return None
    if cut is None or counted >= total:
        open_run(store, lake, trace_id)
        return None
    # Noted first: a server stopped during the copy finishes it when it starts again.
    with store.transaction(derives=False) as conn:
        conn.execute("INSERT OR REPLACE INTO lake_opening VALUES (?, ?, ?)", [trace_id, cut, total])
    copy_events(store, lake, trace_id, "event_id <= $cut", {"cut": cut})
    return opening(store, trace_id)


def opening(store: Store, trace_id: str) -> Opening | None:
    """How much of run `trace_id` is here while its copy from the lake is not done (None: it is)."""
    rows = store.query(
        "SELECT o.total, coalesce(r.events, 0) FROM lake_opening o LEFT JOIN runs r USING (trace_id) "
        "WHERE o.trace_id = ?",
        [trace_id],
    )
    if not rows:
        return None
    total, local = rows[0]
    return Opening(trace_id, int(local), int(total))


def being_copied(store: Store, trace_id: str) -> Opening | None:
    """`opening`, on a store whether or not a lake is attached now (a server started without one on a
    store that was copying a run): None also when no lake was ever attached (no `lake_opening`)."""
    return opening(store, trace_id) if _kept(store, "lake_opening") else None


def copied_unordered(store: Store, trace_id: str) -> bool:
    """Whether a span link copied some of run `trace_id`'s events out of order (whether or not a lake is
    attached now): a rewind reads its events in the lake's order (`prefix.py`), no index is built of it."""
    return _kept(store, "lake_unordered") and bool(
        store.query("SELECT 1 FROM lake_unordered WHERE trace_id = ?", [trace_id])
    )


def open_span(store: Store, lake: Lake, trace_id: str, span_id: str) -> bool:
    """While run `trace_id` is being copied, copy span `span_id`'s events and its ancestors' if the store
    lacks it; whether it copied any."""
    if opening(store, trace_id) is None:
        return False
    if store.query("SELECT 1 FROM spans WHERE trace_id = ? AND span_id = ?", [trace_id, span_id]):
        return False
    if not store.query("SELECT 1 FROM devtool_lake.spans WHERE trace_id = ? AND span_id = ?", [trace_id, span_id]):
        return False  # a link to a span the run does not have: the page says so
    with asked_first(trace_id):
        if copy_lineage(store, lake, trace_id, span_id) == 0:
            return False
        with store.transaction(derives=False) as conn:
            # Stored before events of the same instants copied after it: read in the lake's order (`prefix.py`).
            conn.execute("INSERT OR IGNORE INTO lake_unordered VALUES (?)", [trace_id])
        return True


@contextmanager
def asked_first(trace_id: str) -> Iterator[None]:
    """A copy a page asked for (a span link's, a rewind's prefix) of run `trace_id`: the copy of the rest
    (`finish_open`) waits before its next chunk until it is done."""
    with _asked_changed:
        _asked[trace_id] = _asked.get(trace_id, 0) + 1
    try:
        yield
    finally:
        with _asked_changed:
            _asked[trace_id] -= 1
            if _asked[trace_id] == 0:
                del _asked[trace_id]
            _asked_changed.notify_all()


def finish_open(store: Store, lake: Lake, trace_id: str, *, chunk: int | None = None) -> bool:
    """Copy the rest of run `trace_id` (the events after its head's cut, `chunk` at a time, default the
    lake's `copy_chunk`), if it is being opened and no other thread of this process copies it; whether
    this call finished it. Before each chunk it waits for the span copies pages asked for meanwhile."""
    chunk = lake.config.copy_chunk if chunk is None else chunk
    with _finishing_lock:
        if trace_id in _finishing:
            return False
        _finishing.add(trace_id)
    try:
        while True:
            rows = store.query("SELECT cut FROM lake_opening WHERE trace_id = ?", [trace_id])
            if not rows:
                return False
            cut = rows[0][0]
            upto, _ = store.query(_CUT, {"trace": trace_id, "after": cut, "n": chunk})[0]
            if upto is None:
                break
            with _asked_changed:
                _asked_changed.wait_for(lambda: trace_id not in _asked)
            where = "event_id > $cut AND event_id <= $upto"
            copy_events(store, lake, trace_id, where, {"cut": cut, "upto": upto}, keys=False)
            with store.transaction(derives=False) as conn:
                conn.execute("UPDATE lake_opening SET cut = ? WHERE trace_id = ?", [upto, trace_id])
        with store.transaction() as conn:
            # Its loads left it unkeyed: keyed once, now that it is whole, as a load of it whole would.
            span_keys_build.key_runs(conn, [trace_id], min_events=span_keys_build.LOAD_KEYED_EVENTS)
        _copy_rest_of_run(store, lake, trace_id)
        _done(store, trace_id)
        return True
    finally:
        with _finishing_lock:
            _finishing.discard(trace_id)


def unfinished_opens(store: Store, *, unordered: bool = False) -> list[str]:
    """The runs whose copy from the lake began and did not end (a server stopped meanwhile), whether or
    not a lake is attached now (none: no lake was ever attached); `unordered`: and those a span link
    copied out of order (`copied_unordered`)."""
    if not _kept(store, "lake_opening"):
        return []
    also = " UNION SELECT trace_id FROM lake_unordered" if unordered and _kept(store, "lake_unordered") else ""
    return [row[0] for row in store.query(f"SELECT trace_id FROM lake_opening{also} ORDER BY trace_id")]


def _kept(store: Store, table: str) -> bool:
    """Whether the store has local table `table` (the lake's are made when a lake is attached)."""
    return bool(
        store.query(
            "SELECT 1 FROM duckdb_tables() WHERE database_name = current_database() AND table_name = ?", [table]
        )
    )


def _copy_rest_of_run(store: Store, lake: Lake, trace_id: str) -> None:
    copy_journal(store, lake, trace_id)
    copy_run_snapshots(store, trace_id)


def _done(store: Store, trace_id: str) -> None:
    with store.transaction(derives=False) as conn:
        conn.execute("DELETE FROM lake_opening WHERE trace_id = ?", [trace_id])
    through = store.query("SELECT last_event_id FROM runs WHERE trace_id = ?", [trace_id])
    if through:
        # Its events are the lake's: it need not be published back.
        mark_published(store, trace_id, int(through[0][0]))
