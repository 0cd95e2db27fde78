"""A big load's events a chunk at a time: id ranges that each hold up to a number of events.

A load's statements that would hold a whole file at once (the spans' derive, the search words) run
over its events a range of ids at a time. Ids only grow, but may leave gaps: an OTLP file's lines are
numbered `otlp_sql.LINE_STRIDE` apart (4 million ids a line of 512 spans), so ranges of a million
ids would hold a quarter of a line or none, and a million-span file would take some 8,200 statements
(its words took 17.8 s of a 28 s load of 100,000 spans, in 818 statements). A range here is as many
ids as hold `size` events.
"""

from __future__ import annotations

from collections.abc import Iterator

import duckdb


def event_chunks(conn: duckdb.DuckDBPyConnection, first: int, last: int, size: int) -> Iterator[tuple[int, int]]:
    """The ranges `(lo, hi)` of event ids from `first` to `last`, in order, that cover them: each holds
    at most `size` stored events, and each but the last at least half as many."""
    lo = first
    while lo <= last:
        hi = _end(conn, lo, last, size)
        yield lo, hi
        lo = hi + 1


def _end(conn: duckdb.DuckDBPyConnection, lo: int, last: int, size: int) -> int:
    hi = lo + size - 1
    if hi >= last:
        return last  # the rest of the ids: no more events than ids
    held = conn.execute("SELECT count(*) FROM events WHERE event_id BETWEEN $lo AND $hi", {"lo": lo, "hi": hi})
    if 2 * int(held.fetchall()[0][0]) >= hi - lo + 1:
        return hi  # ids dense enough: the range is the chunk
    found = conn.execute(
        "SELECT max(event_id) FROM (SELECT event_id FROM events WHERE event_id BETWEEN $lo AND $last "
        "ORDER BY event_id LIMIT $size)",
        {"lo": lo, "last": last, "size": size},
    ).fetchall()[0][0]
    return last if found is None else int(found)
