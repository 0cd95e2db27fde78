"""The spans of a big load of new runs, derived a chunk of events at a time: memory that does not grow.

Deriving a load's spans at once (`derive.refresh`) holds every span of the file in one aggregate and
one recursive walk: for ten million events, millions of rows at a time. `derive_new` does the same
work `CHUNK` events at a time, in event id order (a file's order), and carries from one chunk to the
next only the spans still *open*: started and not ended (the root, the agents running at the chunk's
end, their loops and turns; a few hundred whatever the file). A chunk:

1. groups its events by span and merges them into the open spans (a start is the first event of
   its span, so an open span's first event, and with it its kind, name and parent, never changes);
2. places the spans it sees first (depth, frame parent) by a recursive walk down from their parents,
   which are among them, open, or emitted before (then looked up, which few chunks need);
3. emits the spans that are done (ended, or never started: an end without its start, an instant) to
   `spans`, in time order, each with its frame children counted so far;
4. counts the new shown spans under their frame parents: an open parent carries its count, one
   emitted before gets it added at the end (`stream_late`).

What a whole derive would make differently is found and mended afterwards, so the spans are exactly
those of `derive.refresh`: a span id seen again after its span was emitted (a log line before its
span's start, a duplicated event) leaves two rows, which `derive.rederive` makes one
(`find_duplicates`); a span first seen before its parent (out of time order) was placed as a root,
and so was a span caught in a parent cycle: `fix_places` walks their runs again. Both are rare: a
run's events in time order need neither. tests/test_store_derive_stream.py compares the two derives
at every chunk size on traces made to hit each case.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from devtool.store.span_sql import GROUPED, LOG_NAMES, RECOUNT, REWALK, SHOWN, shown, span_projection

CHUNK = 1_000_000

# The first event's columns an open span keeps, so a later chunk need not read the event again.
_FIRST_COLUMNS: tuple[str, ...] = ("type", "parent_span_id", "label", "agent_id", "call_id", "ts", "success")
_FIRST_COLUMNS += ("error", "content_hash", "cache")
_FIRST = ", ".join(_FIRST_COLUMNS)
_SHOWN_D = shown("d")

_SETUP = """
    CREATE OR REPLACE TEMP TABLE stream_open (
        trace_id VARCHAR, span_id VARCHAR, first_id BIGINT, start_id BIGINT, min_ts DOUBLE, max_ts DOUBLE,
        n BIGINT, type VARCHAR, parent_span_id VARCHAR, label VARCHAR, agent_id VARCHAR, call_id VARCHAR,
        ts DOUBLE, success BOOLEAN, error VARCHAR, content_hash VARCHAR, cache BOOLEAN,
        depth INTEGER, frame_parent_id VARCHAR, shown BOOLEAN, children BIGINT
    );
    CREATE OR REPLACE TEMP TABLE stream_late (trace_id VARCHAR, span_id VARCHAR, n BIGINT);
"""

# 1. This chunk's events by span, merged into the open spans (an open span has started: its start,
# earlier than any event of this chunk, stays its first event).
_MERGE = f"""
    CREATE OR REPLACE TEMP TABLE stream_groups AS
    WITH c AS ({GROUPED} FROM events WHERE event_id BETWEEN $lo AND $hi GROUP BY trace_id, span_id)
    SELECT coalesce(o.trace_id, c.trace_id) AS trace_id, coalesce(o.span_id, c.span_id) AS span_id,
           coalesce(o.first_id, c.first_id) AS first_id, coalesce(o.start_id, c.start_id) AS start_id,
           c.end_id, least(o.min_ts, c.min_ts) AS min_ts, greatest(o.max_ts, c.max_ts) AS max_ts,
           coalesce(o.n, 0) + coalesce(c.n, 0) AS n, o.span_id IS NULL AS new
    FROM c FULL JOIN stream_open o ON o.trace_id = c.trace_id AND o.span_id = c.span_id
"""

_FIRSTS = f"""
    CREATE OR REPLACE TEMP TABLE stream_firsts AS
    SELECT event_id, {_FIRST} FROM events
    WHERE event_id BETWEEN $lo AND $hi AND event_id IN (SELECT first_id FROM stream_groups WHERE new)
    UNION ALL
    SELECT first_id, {_FIRST} FROM stream_open
"""

_SPANS = f"""
    CREATE OR REPLACE TEMP TABLE derived AS
    SELECT {span_projection("g", "f", "e")}, g.new,
           g.start_id IS NULL OR g.end_id IS NOT NULL AS done
    FROM stream_groups g
    JOIN stream_firsts f ON f.event_id = g.first_id
    LEFT JOIN (SELECT * EXCLUDE (body) FROM events WHERE event_id BETWEEN $lo AND $hi) e ON e.event_id = g.end_id
"""

# 2. New spans placed by a walk down from their parents, which are new, open, or emitted before (in
# `stream_lookup`, made only when the walk finds a new span whose parent is neither new nor open: an
# `orphan`, which few chunks have). A span is keyed by its first event's id from here on: one number
# to join on, rather than two strings that are not short enough for DuckDB to compare inline.
_PLACE = f"""
    CREATE OR REPLACE TEMP TABLE placed AS
    WITH RECURSIVE
    fresh AS MATERIALIZED (
        SELECT d.trace_id, d.span_id, d.parent_span_id, d.first_id, {_SHOWN_D} AS shown, q.first_id AS parent_first
        FROM derived d LEFT JOIN derived q ON q.new AND q.trace_id = d.trace_id AND q.span_id = d.parent_span_id
        WHERE d.new
    ),
    known AS (
        SELECT trace_id, span_id, depth, frame_parent_id, shown FROM stream_open
        UNION ALL SELECT trace_id, span_id, depth, frame_parent_id, shown FROM stream_lookup
    ),
    walk(trace_id, first_id, span_id, depth, frame_parent_id, shown, orphan) AS (
        SELECT d.trace_id, d.first_id, d.span_id, coalesce(p.depth + 1, 0),
               CASE WHEN p.span_id IS NULL THEN NULL WHEN p.shown THEN p.span_id ELSE p.frame_parent_id END,
               d.shown, p.span_id IS NULL AND d.parent_span_id IS NOT NULL
        FROM fresh d
        LEFT JOIN known p ON p.trace_id = d.trace_id AND p.span_id = d.parent_span_id
        WHERE d.parent_first IS NULL
        UNION ALL
        SELECT c.trace_id, c.first_id, c.span_id, w.depth + 1,
               CASE WHEN w.shown THEN w.span_id ELSE w.frame_parent_id END, c.shown, false
        FROM walk w JOIN fresh c ON c.parent_first = w.first_id
        WHERE w.depth < 100000
    )
    SELECT trace_id, first_id, depth, frame_parent_id, shown, orphan FROM walk
"""

_LOOKUP = f"""
    CREATE OR REPLACE TEMP TABLE stream_lookup AS
    SELECT trace_id, span_id, any_value(depth) AS depth, any_value(frame_parent_id) AS frame_parent_id,
           any_value({SHOWN}) AS shown
    FROM spans
    WHERE trace_id IN (SELECT trace_id FROM touched_traces)
      AND (trace_id, span_id) IN (
          SELECT (d.trace_id, d.parent_span_id) FROM placed p JOIN derived d USING (first_id) WHERE p.orphan
      )
    GROUP BY trace_id, span_id
"""

_NO_LOOKUP = """
    CREATE OR REPLACE TEMP TABLE stream_lookup AS
    SELECT trace_id, span_id, depth, frame_parent_id, shown FROM stream_open WHERE false
"""

# 4. New shown spans counted under their frame parents; those emitted before get theirs at the end.
_KIDS = """
    CREATE OR REPLACE TEMP TABLE stream_kids AS
    SELECT trace_id, frame_parent_id AS span_id, count(*) AS n
    FROM placed WHERE shown AND frame_parent_id IS NOT NULL
    GROUP BY ALL;
    INSERT INTO stream_late
    SELECT k.trace_id, k.span_id, k.n FROM stream_kids k
    ANTI JOIN derived d ON d.trace_id = k.trace_id AND d.span_id = k.span_id;
"""

# A span's place and children: placed now (new) or carried (open).
_STATE = """
    FROM derived d
    LEFT JOIN placed p ON p.first_id = d.first_id
    LEFT JOIN stream_open o ON o.first_id = d.first_id
    LEFT JOIN stream_kids k ON k.trace_id = d.trace_id AND k.span_id = d.span_id
"""
_DEPTH = "coalesce(p.depth, o.depth, 0)"
_FRAME_PARENT = "CASE WHEN d.new THEN p.frame_parent_id ELSE o.frame_parent_id END"
_CHILDREN = "coalesce(o.children, 0) + coalesce(k.n, 0)"

# 3. The spans that are done, in time order (all of them at the end: what is still open is running).
_EMIT = f"""
    INSERT INTO spans
    SELECT d.trace_id, d.span_id, d.parent_span_id, d.kind, d.instant, d.name, d.agent_id, d.call_id,
           d.start_ts, d.end_ts, d.status, d.error, d.content_hash, d.cache,
           CASE WHEN d.instant THEN d.first_id ELSE d.start_id END, d.end_id, d.events,
           {_DEPTH}, {_FRAME_PARENT}, {_CHILDREN}
    {_STATE}
    JOIN touched_traces t ON t.trace_id = d.trace_id
    WHERE d.done OR $last
    ORDER BY t.trace_no, d.start_ts
"""

_CARRY = f"""
    CREATE OR REPLACE TEMP TABLE stream_next AS
    SELECT d.trace_id, d.span_id, d.first_id, d.start_id, g.min_ts, g.max_ts, g.n,
           {", ".join(f"f.{column}" for column in _FIRST_COLUMNS)},
           {_DEPTH} AS depth, {_FRAME_PARENT} AS frame_parent_id, {_SHOWN_D} AS shown, {_CHILDREN} AS children
    {_STATE}
    JOIN stream_groups g ON g.trace_id = d.trace_id AND g.span_id = d.span_id
    JOIN stream_firsts f ON f.event_id = d.first_id
    WHERE NOT d.done;
    DROP TABLE stream_open;
    ALTER TABLE stream_next RENAME TO stream_open;
"""

_LATE = """
    UPDATE spans SET frame_children = spans.frame_children + late.n
    FROM (SELECT trace_id, span_id, sum(n) AS n FROM stream_late GROUP BY ALL) late
    WHERE spans.trace_id = late.trace_id AND spans.span_id = late.span_id
"""

# Counted by a hash of the key (a number groups faster than two strings); a collision only has two
# spans derived again, which gives them as they are.
_DUPLICATES = """
    CREATE OR REPLACE TEMP TABLE touched_spans AS
    WITH keyed AS (
        SELECT trace_id, span_id, hash(trace_id, span_id) AS k FROM spans
        WHERE trace_id IN (SELECT trace_id FROM touched_traces)
    )
    SELECT DISTINCT trace_id, span_id FROM keyed
    WHERE k IN (SELECT k FROM keyed GROUP BY k HAVING count(*) > 1)
"""

# Runs with a root whose parent is a span of theirs: a child seen before its parent, or a cycle.
_MISPLACED = """
    CREATE OR REPLACE TEMP TABLE misplaced AS
    SELECT DISTINCT r.trace_id
    FROM (SELECT trace_id, span_id, parent_span_id FROM spans
          WHERE trace_id IN (SELECT trace_id FROM touched_traces) AND depth = 0 AND parent_span_id IS NOT NULL) r
    JOIN spans p ON p.trace_id = r.trace_id AND p.span_id = r.parent_span_id
"""


@dataclass(frozen=True, slots=True)
class Streamed:
    """What `derive_new` did: spans made (those the pages show and count), chunks read, and the most
    spans open after a chunk (what was carried: the memory a chunk needs beyond its own events)."""

    spans: int
    chunks: int
    most_open: int


def derive_new(
    conn: duckdb.DuckDBPyConnection, after_event_id: int, last_event_id: int, *, size: int = CHUNK
) -> Streamed:
    """Derive the spans of the events after `after_event_id` up to `last_event_id`, all of traces
    with no span stored (those in `touched_traces`, numbered in their order as `trace_no`), `size`
    events at a time.

    Leaves what `find_duplicates` and `fix_places` mend. The caller holds the write lock, in a transaction.
    """
    conn.execute(_SETUP)
    lo = after_event_id + 1
    chunks = most_open = 0
    while lo <= last_event_id:
        hi = _chunk_end(conn, lo, last_event_id, size)
        _chunk(conn, lo, hi, last=False)
        chunks += 1
        most_open = max(most_open, int(conn.execute("SELECT count(*) FROM stream_open").fetchall()[0][0]))
        lo = hi + 1
    _chunk(conn, 1, 0, last=True)  # no events: emits the spans still open, running
    conn.execute(_LATE)
    conn.execute(
        "DROP TABLE stream_open; DROP TABLE stream_late; DROP TABLE stream_groups; DROP TABLE stream_firsts; "
        "DROP TABLE stream_lookup; DROP TABLE stream_kids; DROP TABLE derived; DROP TABLE placed"
    )
    count = conn.execute(
        f"SELECT count(*) FROM spans WHERE trace_id IN (SELECT trace_id FROM touched_traces) AND {SHOWN}"
    )
    return Streamed(int(count.fetchall()[0][0]), chunks, most_open)


def _chunk_end(conn: duckdb.DuckDBPyConnection, lo: int, last: int, size: int) -> int:
    """The id ending a chunk of `size` events from `lo`. Ids may leave gaps (an OTLP file's lines are
    numbered `otlp_sql.LINE_STRIDE` apart, 4 million ids a line of 512 spans): a chunk of `size` ids
    would then hold one line, and each chunk's statements would run for a thousand events."""
    hi = min(lo + size - 1, last)
    held = conn.execute("SELECT count(*) FROM events WHERE event_id BETWEEN $lo AND $hi", {"lo": lo, "hi": hi})
    if 2 * int(held.fetchall()[0][0]) >= hi - lo + 1:
        return hi  # ids dense enough: the range is the chunk
    found = conn.execute(
        "SELECT max(event_id) FROM (SELECT event_id FROM events WHERE event_id BETWEEN $lo AND $last "
        "ORDER BY event_id LIMIT $size)",
        {"lo": lo, "last": last, "size": size},
    ).fetchall()[0][0]
    return last if found is None else int(found)


def find_duplicates(conn: duckdb.DuckDBPyConnection) -> bool:
    """Whether the derive left a span id twice in a run; they are put in `touched_spans` (for
    `derive.rederive`), which is dropped when there are none."""
    conn.execute(_DUPLICATES)
    if conn.execute("SELECT count(*) FROM touched_spans").fetchall()[0][0]:
        return True
    conn.execute("DROP TABLE touched_spans")
    return False


def fix_places(conn: duckdb.DuckDBPyConnection) -> None:
    """Walk again the runs where a span was placed as a root under a parent of theirs, and recount."""
    conn.execute(_MISPLACED)
    if conn.execute("SELECT count(*) FROM misplaced").fetchall()[0][0]:
        conn.execute(REWALK.format(traces="misplaced"))
        conn.execute(
            "CREATE OR REPLACE TEMP TABLE recount AS "
            "SELECT trace_id, span_id FROM spans WHERE trace_id IN (SELECT trace_id FROM misplaced)"
        )
        conn.execute(RECOUNT.replace("touched_traces", "misplaced"))
        conn.execute("DROP TABLE recount")
    conn.execute("DROP TABLE misplaced")


def _chunk(conn: duckdb.DuckDBPyConnection, lo: int, hi: int, *, last: bool) -> None:
    bounds = {"lo": lo, "hi": hi}
    conn.execute(_MERGE, bounds)
    conn.execute(_FIRSTS, bounds)
    conn.execute(_SPANS, bounds)
    conn.execute(LOG_NAMES.format(where="ev.event_id BETWEEN $lo AND $hi"), bounds)
    conn.execute(_NO_LOOKUP)
    conn.execute(_PLACE)
    if conn.execute("SELECT count(*) FROM placed WHERE orphan").fetchall()[0][0]:
        conn.execute(_LOOKUP)
        conn.execute(_PLACE)
    conn.execute(_KIDS)
    conn.execute(_EMIT, {"last": last})
    conn.execute(_CARRY)
