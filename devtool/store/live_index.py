"""The index step of live runs: their search words and call fingerprints, made after the derive that
makes them visible, in a transaction of its own.

A live derive (`Store.derive_backlog`) used to make a run's words (`search.index_events`) and call
fingerprints (`call_prints.update`) with its spans and summary: eleven of its ~26 statements, about a
third of its time, which a page of the run (its header, its spans) waited for and never reads. Now
the derive records, in its own transaction, which runs it left to index and from which event on
(`mark`: a row of `unindexed` a run), and the index step (`index`) makes their words and fingerprints
and deletes those rows, in one transaction. A process that stops between the two leaves the rows,
and opening the store indexes them again (`PENDING`), as it derives what a stopped append left.

Indexing an event twice changes nothing: the words add only what the index has not, and a printed
run's calls are printed again in place. So the step may read events newer than the derive it
follows (appended meanwhile): the next step prints them again, alike.

Readers of words or fingerprints (the search, a find in a run, compare, why) wait for the step as
they wait for the derive (`web/live/settled.py`; `Store.derive_backlog()` runs it). The pages of a
run do not wait: those of a replay (which of its calls ran live, what it saved) read its calls from
its events while its step is pending (`printed`), as they read an unprinted run's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import duckdb

from devtool.store import call_prints, list_param, search

if TYPE_CHECKING:
    from devtool.store.database import Store

# Each run left to index, and the first event id of it not indexed: what a stopped process left.
PENDING = "SELECT trace_id, min(after_event_id) + 1 FROM unindexed GROUP BY trace_id"


def mark(conn: duckdb.DuckDBPyConnection, taken: dict[str, int]) -> None:
    """Record in the derive's transaction that `taken`'s runs (trace id: first event id derived) are
    to be indexed from those events on."""
    traces = sorted(taken)
    conn.execute(
        f"INSERT INTO unindexed SELECT unnest({list_param.of('t')}), unnest({list_param.of('a', 'BIGINT')})",
        {"t": list_param.values(traces), "a": list_param.values([taken[t] - 1 for t in traces])},
    )


def index(conn: duckdb.DuckDBPyConnection, taken: dict[str, int]) -> None:
    """Make the words and call fingerprints of `taken`'s runs (trace id: first event id to index), and
    delete their `unindexed` rows, in the caller's transaction, begun after their derive committed
    (the rows it deletes are those it sees: a derive committing meanwhile leaves its own)."""
    traces = tuple(sorted(taken))
    after = min(taken.values()) - 1
    params = {"t": list_param.values(traces)}
    conn.execute(
        f"CREATE OR REPLACE TEMP TABLE touched_traces AS SELECT unnest({list_param.of('t')}) AS trace_id", params
    )
    call_prints.update(conn, after)
    conn.execute("DROP TABLE touched_traces")
    search.index_events(conn, after, traces)
    conn.execute(f"DELETE FROM unindexed WHERE trace_id IN (SELECT unnest({list_param.of('t')}))", params)


def printed(store: Store, cursor: duckdb.DuckDBPyConnection, trace_id: str) -> bool:
    """Whether run `trace_id`'s stored call fingerprints are all of its calls derived: it is printed,
    and no index step of it is pending (else its newest calls may be missing from them)."""
    if store.unindexed.holds(trace_id):
        return False
    return bool(cursor.execute("SELECT 1 FROM printed_runs WHERE trace_id = ?", [trace_id]).fetchall())
