"""A process journal drawn on a time axis: its entries per pixel, its invocations, where an entry is.

`journal_marks` does for a journal what `timeline_window` does for a run: the entries between two
instants fall into `buckets` columns, and each (entry type, column) becomes one mark, the entry itself
when it is alone there, else a counted mark. A journal of a million entries thus answers with at most
types × buckets marks. `journal_invocations` pairs each invocation's entries by the `trace_id` they
carry, with the run's own times when that run is loaded too. `entry_position` is where an entry is in
load order, so a page of the entries table can be found for it. `journal_gaps` are the longest quiet
stretches, which a chart may cut out of its axis.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from devtool.store.database import Store
from devtool.store.errors import NotFoundError

MAX_BUCKETS = 4096
MAX_MARKS = 20_000  # a journal with thousands of entry types still answers in bounds


@dataclass(frozen=True, slots=True)
class JournalMark:
    """One entry (`count == 1`, `entry_id` and `data` set), or `count` entries of one type in one column."""

    entry_type: str
    column: int
    start_ms: float
    end_ms: float
    count: int
    entry_id: str | None
    data: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class JournalSpan:
    """A journal's first and last entry times, its entry count and how many entry types it has."""

    process_id: str
    start_ms: float
    end_ms: float
    entries: int
    types: int


@dataclass(frozen=True, slots=True)
class Invocation:
    """One invocation: the journal entries that carry its run's `trace_id`, and that run if loaded."""

    trace_id: str
    number: int | None  # `data.invocation` of its entries
    start_ms: float  # its first entry
    end_ms: float  # its last entry
    start_entry_id: str
    result_entry_id: str | None  # its `invocation_result`, if recorded
    success: bool | None  # what the result says
    run_name: str | None  # the run's name, when the run is in the store
    run_status: str | None
    run_start_ms: float | None
    run_end_ms: float | None
    run_spans: int | None

    @property
    def first_ms(self) -> float:
        return min(self.start_ms, self.run_start_ms if self.run_start_ms is not None else self.start_ms)

    @property
    def last_ms(self) -> float:
        return max(self.end_ms, self.run_end_ms if self.run_end_ms is not None else self.end_ms)


def journal_span(store: Store, process_id: str) -> JournalSpan:
    rows = store.query(
        "SELECT min(ts_ms), max(ts_ms), count(*), count(DISTINCT entry_type) FROM journal_entries WHERE process_id = ?",
        [process_id],
    )
    start, end, count, types = rows[0]
    if not count:
        raise NotFoundError(f"no process journal {process_id!r} in the store")
    return JournalSpan(process_id, start, end, count, types)


def journal_gaps(store: Store, process_id: str, *, limit: int = 3) -> list[tuple[float, float]]:
    """The `limit` longest stretches of time between two consecutive entries of a journal, longest
    first: what a chart may cut out of its axis (`devtool.web.pages.time_axis`)."""
    rows = store.query(
        """
        SELECT ts_ms, next_ms FROM (
            SELECT ts_ms, lead(ts_ms) OVER (ORDER BY ts_ms) AS next_ms FROM journal_entries WHERE process_id = ?
        )
        WHERE next_ms > ts_ms ORDER BY next_ms - ts_ms DESC LIMIT ?
        """,
        [process_id, limit],
    )
    return [(float(start), float(end)) for start, end in rows]


# Entries are bucketed without their data; only the marks that are one entry read theirs back.
_MARKS = """
    WITH placed AS (
        SELECT entry_type, entry_seq, ts_ms,
               least(greatest(floor((ts_ms - $start) * $scale), 0), $buckets - 1)::INTEGER AS col
        FROM journal_entries
        WHERE process_id = $process AND ts_ms BETWEEN $start AND $end
    ),
    marks AS (
        SELECT entry_type, col, min(ts_ms) AS first, max(ts_ms) AS last, count(*) AS n, min(entry_seq) AS seq
        FROM placed
        GROUP BY entry_type, col
        ORDER BY seq
        LIMIT $limit
    )
    SELECT m.entry_type, m.col, m.first, m.last, m.n, j.entry_id, j.data
    FROM marks m
    -- The mark's own condition is in the key: as a term of ON alone, DuckDB 1.5 joins by nested loops
    -- (0.8 s against 5 ms over two million entries).
    LEFT JOIN journal_entries j ON j.process_id = $process AND j.entry_seq = CASE WHEN m.n = 1 THEN m.seq END
    ORDER BY m.seq
"""


def journal_marks(
    store: Store, process_id: str, *, start_ms: float, end_ms: float, buckets: int = 1000
) -> list[JournalMark]:
    """The entries of `process_id` between two instants, one mark per entry type and column."""
    if not 1 <= buckets <= MAX_BUCKETS:
        raise ValueError(f"buckets must be between 1 and {MAX_BUCKETS}, not {buckets}")
    if end_ms < start_ms:
        raise ValueError(f"the window ends ({end_ms}) before it starts ({start_ms})")
    params = {
        "process": process_id,
        "start": start_ms,
        "end": end_ms,
        "scale": buckets / max(end_ms - start_ms, 1e-3),
        "buckets": buckets,
        "limit": MAX_MARKS,
    }
    return [
        JournalMark(entry_type, col, first, last, count, entry_id, None if data is None else orjson.loads(data))
        for entry_type, col, first, last, count, entry_id, data in store.query(_MARKS, params)
    ]


_INVOCATIONS = """
    SELECT j.trace_id,
           max(TRY_CAST(j.data->>'invocation' AS BIGINT)),
           min(j.ts_ms), max(j.ts_ms),
           arg_min(j.entry_id, j.entry_seq),
           arg_max(j.entry_id, j.entry_seq) FILTER (WHERE j.entry_type = 'invocation_result'),
           arg_max(TRY_CAST(j.data->>'success' AS BOOLEAN), j.entry_seq)
               FILTER (WHERE j.entry_type = 'invocation_result'),
           any_value(r.name), any_value(r.status), any_value(r.started_ts), any_value(r.ended_ts), any_value(r.spans)
    FROM journal_entries j
    LEFT JOIN runs r ON r.trace_id = j.trace_id
    WHERE j.process_id = ? AND j.trace_id IS NOT NULL
    GROUP BY j.trace_id
    ORDER BY min(j.entry_seq)
"""


def journal_invocations(store: Store, process_id: str) -> list[Invocation]:
    """Each agent run the process started, in the order it started them."""
    return [Invocation(*row) for row in store.query(_INVOCATIONS, [process_id])]


def entry_position(store: Store, process_id: str, entry_id: str) -> int:
    """How many entries of the process come before `entry_id` in load order; `NotFoundError` if none is it."""
    rows = store.query(
        """
        SELECT count(*) FILTER (WHERE entry_seq < (
                   SELECT min(entry_seq) FROM journal_entries WHERE process_id = $p AND entry_id = $e)),
               count(*) FILTER (WHERE entry_id = $e)
        FROM journal_entries WHERE process_id = $p
        """,
        {"p": process_id, "e": entry_id},
    )
    before, found = rows[0]
    if not found:
        raise NotFoundError(f"no entry {entry_id!r} in process journal {process_id!r}")
    return int(before)
