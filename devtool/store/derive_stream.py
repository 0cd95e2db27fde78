"""The spans of a big load of new runs, derived a chunk of events at a time: memory that does not grow.

Deriving a load's spans at once (`derive.refresh`) holds every span of the file in one aggregate and
one recursive walk: for ten million events, millions of rows at a time. `derive_new` does the same
work a chunk of events at a time (as many as DuckDB's memory limit fits, `chunk_for`: at most
`CHUNK`), in event id order (a file's order), and carries from one chunk to the
next only the spans still *open*: started and not ended (the root, the agents running at the chunk's
end, their loops and turns; a few hundred whatever the file), held as the rows `spans` would store
for them now (`stream_open`). A chunk is two statements, so that what they hold is freed when each
ends (temporary tables made in the load's transaction keep their rows until it ends, whatever is
dropped), and neither changes a row of `spans` once stored (DuckDB would write the load's every span
again at its commit). `_CHUNK`:

1. groups its events by span and merges them with the open spans (a start is the first event of
   its span, so an open span's first event, and with it its kind, name and parent, never changes);
2. places the spans it sees first (depth, frame parent) by a recursive walk down from their parents,
   which are among them or open;
3. counts the new shown spans under their frame parents (an open parent adds them to its count);
4. stores the spans it made or merged that are done (ended, or never started: an end without its
   start, an instant) in `spans`, in time order.

`_OPEN` then makes the open spans' rows again, from the few events that start and end them.

What a whole derive would make differently is found and mended afterwards, so the spans are exactly
those of `derive.refresh`: a span id seen again after its span was stored (a log line before its
span's start, a duplicated event) leaves two rows, which `derive.rederive` makes one
(`find_duplicates`); a span seen after its parent was stored, or before its parent (out of time
order), was placed as a root, and so was a span caught in a parent cycle: `fix_places` walks their
runs again; a span that stays open after its frame parent ended has its later children counted under
a span stored already, so its run's children are counted again at the end (`stream_detached`). All
are rare: a run's events in time order need none. tests/test_store_derive_stream.py compares the two
derives at every chunk size on traces made to hit each case.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import duckdb

from devtool.store.event_chunks import event_chunks
from devtool.store.span_sql import GROUPED, LOG_EVENTS, RECOUNT, REWALK, SHOWN, log_name, shown, span_projection

# A chunk's statement holds its events' spans at once: a million events a chunk fit in a GiB of
# DuckDB's memory (`chunk_for` gives a smaller limit smaller chunks, in proportion; a 3M load at
# 640MiB ran out of memory in its first chunk of a million, and a 10M load fits in chunks of 625,000).
CHUNK = 1_000_000
_UNITS = {"bytes": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}
_UNITS |= {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}
_LIMIT = re.compile(r"([0-9.]+) ?(bytes|[KMGT]i?B)")

# An open span is held as the row `spans` would store for it now (running), in `stream_open`; this is
# the first event a chunk's projection reads for it (a start: its kind is its type less `:start`).
_OPEN_FIRST = """
    SELECT start_event_id AS event_id, parent_span_id, kind || ':start' AS type, name AS label, agent_id, call_id,
           start_ts AS ts, NULL::BOOLEAN AS success, error, content_hash, cache
    FROM stream_open
"""

_SETUP = """
    CREATE OR REPLACE TEMP TABLE stream_open AS SELECT * FROM spans WHERE false;
    CREATE OR REPLACE TEMP TABLE stream_next AS SELECT * FROM spans WHERE false;
    CREATE OR REPLACE TEMP TABLE stream_detached (trace_id VARCHAR);
"""

# A chunk, in one statement: what DuckDB holds for its CTEs it frees when the statement ends. (Temporary
# tables made or emptied in the load's transaction keep their rows until it ends, for a rollback: a
# chunk's tables, made again at every chunk, held ~170 MB a million events, and spilled to disk.)
# 1. The chunk's events by span, merged with every open span (an open span has started: its start,
#    earlier than any event of this chunk, stays its first event).
# 2. Each span's columns, from its first event and its end.
# 3. The new spans placed by a walk down from their parents, new or open. A span is keyed by its first
#    event's id: one number to join on, rather than two strings too long for DuckDB to compare inline.
#    A new span whose parent is neither (stored by an earlier chunk, or seen later) is placed as a
#    root, and `fix_places` walks its run again.
# 4. The new shown spans counted under their frame parents, and the spans that are done stored, in
#    time order (the open ones are `_OPEN`'s).
_CHUNK = f"""
    INSERT INTO spans
    WITH RECURSIVE
    c AS ({GROUPED} FROM events WHERE event_id BETWEEN $lo AND $hi GROUP BY trace_id, span_id),
    g AS MATERIALIZED (
        SELECT coalesce(o.trace_id, c.trace_id) AS trace_id, coalesce(o.span_id, c.span_id) AS span_id,
               coalesce(o.start_event_id, c.first_id) AS first_id, coalesce(o.start_event_id, c.start_id) AS start_id,
               c.end_id, c.min_ts, c.max_ts, coalesce(o.events, 0) + coalesce(c.n, 0) AS n, o.span_id IS NULL AS new
        FROM c FULL JOIN stream_open o ON o.trace_id = c.trace_id AND o.span_id = c.span_id
    ),
    f AS (
        SELECT event_id, parent_span_id, type, label, agent_id, call_id, ts, success, error, content_hash, cache
        FROM events
        WHERE event_id BETWEEN $lo AND $hi AND event_id IN (SELECT first_id FROM g WHERE new)
        UNION ALL {_OPEN_FIRST}
    ),
    e AS (SELECT * EXCLUDE (body) FROM events WHERE event_id BETWEEN $lo AND $hi),
    d AS MATERIALIZED (
        SELECT {span_projection("g", "f", "e")}, g.new, {shown("")} AS shown_
        FROM g JOIN f ON f.event_id = g.first_id LEFT JOIN e ON e.event_id = g.end_id
    ),
    logs AS (
        SELECT event_id, {log_name("body")} AS message
        FROM events
        WHERE event_id BETWEEN $lo AND $hi
          AND {LOG_EVENTS}
    ),
    fresh AS MATERIALIZED (
        SELECT a.trace_id, a.span_id, a.parent_span_id, a.first_id, a.shown_ AS shown, q.first_id AS parent_first
        FROM d a LEFT JOIN d q ON q.new AND q.trace_id = a.trace_id AND q.span_id = a.parent_span_id
        WHERE a.new
    ),
    known AS (SELECT trace_id, span_id, depth, frame_parent_id, {SHOWN} AS shown FROM stream_open),
    walk(trace_id, first_id, span_id, depth, frame_parent_id, shown) AS (
        SELECT w.trace_id, w.first_id, w.span_id, coalesce(p.depth + 1, 0),
               CASE WHEN p.span_id IS NULL THEN NULL WHEN p.shown THEN p.span_id ELSE p.frame_parent_id END,
               w.shown
        FROM fresh w
        LEFT JOIN known p ON p.trace_id = w.trace_id AND p.span_id = w.parent_span_id
        WHERE w.parent_first IS NULL
        UNION ALL
        SELECT c.trace_id, c.first_id, c.span_id, w.depth + 1,
               CASE WHEN w.shown THEN w.span_id ELSE w.frame_parent_id END, c.shown
        FROM walk w JOIN fresh c ON c.parent_first = w.first_id
        WHERE w.depth < 100000
    ),
    placed AS MATERIALIZED (SELECT trace_id, first_id, depth, frame_parent_id, shown FROM walk),
    kids AS (
        SELECT trace_id, frame_parent_id AS span_id, count(*) AS n
        FROM placed WHERE shown AND frame_parent_id IS NOT NULL
        GROUP BY ALL
    )
    SELECT d.trace_id, d.span_id, d.parent_span_id, d.kind, d.instant,
           CASE WHEN d.instant THEN coalesce(l.message, d.name) ELSE d.name END, d.agent_id, d.call_id, d.start_ts,
           d.end_ts, d.status, d.error, d.content_hash, d.cache,
           CASE WHEN d.instant THEN d.first_id ELSE d.start_id END, d.end_id, d.events,
           coalesce(p.depth, o.depth, 0), CASE WHEN d.new THEN p.frame_parent_id ELSE o.frame_parent_id END,
           coalesce(o.frame_children, 0) + coalesce(k.n, 0)
    FROM d
    JOIN touched_traces t ON t.trace_id = d.trace_id
    LEFT JOIN placed p ON p.first_id = d.first_id
    LEFT JOIN stream_open o ON o.start_event_id = d.first_id
    LEFT JOIN kids k ON k.trace_id = d.trace_id AND k.span_id = d.span_id
    LEFT JOIN logs l ON l.event_id = d.first_id
    WHERE d.status <> 'running'
    ORDER BY t.trace_no, d.start_ts
"""

# The spans open after a chunk, as `spans` would store them now, made apart from `_CHUNK` (which stores
# the others): rows of `spans` deleted or updated in the load's transaction have DuckDB write every
# span of the load again at its commit (4.9 s at 3M events). They are the open spans the chunk did not
# end, and those it started and did not end, placed by a walk from their parents, which are open or
# were started and stored by the chunk (a loop that outlives its agent; one whose parent is neither
# is placed as a root, as in `_CHUNK`), their children counted from the spans the chunk stored and
# from each other. One whose frame parent is not open has ended before it (out of
# order): the children it has later are counted under a span stored already, which `derive_new`
# recounts at the end (`stream_detached`).
_OPEN = f"""
    INSERT INTO stream_next
    WITH RECURSIVE
    ended AS (SELECT DISTINCT trace_id, span_id FROM events WHERE event_id BETWEEN $lo AND $hi AND type LIKE '%:end'),
    started AS (
        SELECT trace_id, span_id, min(event_id) AS start_id FROM events
        WHERE event_id BETWEEN $lo AND $hi AND type LIKE '%:start'
        GROUP BY ALL
    ),
    begun AS (
        SELECT s.* FROM started s
        ANTI JOIN ended x ON x.trace_id = s.trace_id AND x.span_id = s.span_id
        ANTI JOIN stream_open o ON o.trace_id = s.trace_id AND o.span_id = s.span_id
    ),
    counts AS (
        SELECT trace_id, span_id, count(*) AS n FROM events
        WHERE event_id BETWEEN $lo AND $hi
          AND (trace_id, span_id) IN (
              SELECT (trace_id, span_id) FROM begun UNION ALL SELECT (trace_id, span_id) FROM stream_open
          )
        GROUP BY ALL
    ),
    g AS (
        SELECT b.trace_id, b.span_id, b.start_id AS first_id, b.start_id, NULL::BIGINT AS end_id,
               NULL::DOUBLE AS min_ts, NULL::DOUBLE AS max_ts, c.n
        FROM begun b JOIN counts c ON c.trace_id = b.trace_id AND c.span_id = b.span_id
    ),
    f AS (
        SELECT * EXCLUDE (body) FROM events
        WHERE event_id BETWEEN $lo AND $hi AND event_id IN (SELECT start_id FROM begun)
    ),
    d AS MATERIALIZED (
        SELECT {span_projection("g", "f", "e")}, {shown("")} AS shown_
        FROM g JOIN f ON f.event_id = g.first_id LEFT JOIN f e ON false  -- begun, not ended: no end event
    ),
    placed AS (
        SELECT trace_id, span_id, depth, frame_parent_id, instant, kind FROM stream_open
        UNION ALL
        SELECT trace_id, span_id, depth, frame_parent_id, instant, kind FROM spans
        WHERE trace_id IN (SELECT trace_id FROM touched_traces) AND start_event_id BETWEEN $lo AND $hi
    ),
    walk(trace_id, span_id, depth, frame_parent_id, shown) AS (
        SELECT a.trace_id, a.span_id, coalesce(p.depth + 1, 0),
               CASE WHEN p.span_id IS NULL THEN NULL WHEN {shown("p")} THEN p.span_id ELSE p.frame_parent_id END,
               a.shown_
        FROM d a
        LEFT JOIN placed p ON p.trace_id = a.trace_id AND p.span_id = a.parent_span_id
        WHERE NOT EXISTS (SELECT 1 FROM d q WHERE q.trace_id = a.trace_id AND q.span_id = a.parent_span_id)
        UNION ALL
        SELECT c.trace_id, c.span_id, w.depth + 1, CASE WHEN w.shown THEN w.span_id ELSE w.frame_parent_id END,
               c.shown_
        FROM walk w JOIN d c ON c.trace_id = w.trace_id AND c.parent_span_id = w.span_id
        WHERE w.depth < 100000
    ),
    still AS (
        SELECT d.trace_id, d.span_id, d.parent_span_id, d.kind, d.instant, d.name, d.agent_id, d.call_id,
               d.start_ts, d.end_ts, d.status, d.error, d.content_hash, d.cache, d.start_id, d.end_id, d.events,
               coalesce(w.depth, 0) AS depth, w.frame_parent_id, 0 AS frame_children
        FROM d LEFT JOIN walk w ON w.trace_id = d.trace_id AND w.span_id = d.span_id
        UNION ALL
        SELECT o.* REPLACE (o.events + coalesce(c.n, 0) AS events) FROM stream_open o
        ANTI JOIN ended x ON x.trace_id = o.trace_id AND x.span_id = o.span_id
        LEFT JOIN counts c ON c.trace_id = o.trace_id AND c.span_id = o.span_id
    ),
    -- The spans the chunk stored, each way apart: as one OR, the ids' bounds did not skip the row
    -- groups of earlier chunks, and every chunk read every span stored before it.
    stored AS (
        SELECT trace_id, frame_parent_id, kind, instant FROM spans WHERE start_event_id BETWEEN $lo AND $hi
        UNION ALL
        SELECT trace_id, frame_parent_id, kind, instant FROM spans
        WHERE end_event_id BETWEEN $lo AND $hi AND start_event_id IS NULL
    ),
    stored_kids AS (
        SELECT trace_id, frame_parent_id AS span_id, count(*) AS n FROM stored
        WHERE trace_id IN (SELECT trace_id FROM touched_traces) AND {SHOWN}
          AND frame_parent_id IN (SELECT span_id FROM still)
        GROUP BY ALL
    ),
    open_kids AS (
        SELECT s.trace_id, s.frame_parent_id AS span_id, count(*) AS n FROM still s
        JOIN begun b ON b.trace_id = s.trace_id AND b.span_id = s.span_id
        WHERE {shown("s")} AND s.frame_parent_id IS NOT NULL
        GROUP BY ALL
    )
    SELECT s.* REPLACE (s.frame_children + coalesce(k.n, 0) + coalesce(j.n, 0) AS frame_children)
    FROM still s
    LEFT JOIN stored_kids k ON k.trace_id = s.trace_id AND k.span_id = s.span_id
    LEFT JOIN open_kids j ON j.trace_id = s.trace_id AND j.span_id = s.span_id
"""

_NEXT = """
    INSERT INTO stream_detached
    SELECT DISTINCT o.trace_id FROM stream_next o
    WHERE o.frame_parent_id IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM stream_next p WHERE p.trace_id = o.trace_id AND p.span_id = o.frame_parent_id);
    DELETE FROM stream_open;
    INSERT INTO stream_open SELECT * FROM stream_next;
    DELETE FROM stream_next;
"""

_RELEASE = """
    INSERT INTO spans
    SELECT o.* FROM stream_open o JOIN touched_traces t USING (trace_id) ORDER BY t.trace_no, o.start_ts
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
    chunks = most_open = 0
    for lo, hi in event_chunks(conn, after_event_id + 1, last_event_id, size):
        conn.execute(_CHUNK, {"lo": lo, "hi": hi})
        conn.execute(_OPEN, {"lo": lo, "hi": hi})
        conn.execute(_NEXT)
        chunks += 1
        most_open = max(most_open, int(conn.execute("SELECT count(*) FROM stream_open").fetchall()[0][0]))
    conn.execute(_RELEASE)
    conn.execute("CREATE OR REPLACE TEMP TABLE detached AS SELECT DISTINCT trace_id FROM stream_detached")
    _recount(conn, "detached")
    conn.execute("DROP TABLE stream_open; DROP TABLE stream_next; DROP TABLE stream_detached; DROP TABLE detached")
    count = conn.execute(
        f"SELECT count(*) FROM spans WHERE trace_id IN (SELECT trace_id FROM touched_traces) AND {SHOWN}"
    )
    return Streamed(int(count.fetchall()[0][0]), chunks, most_open)


def chunk_for(conn: duckdb.DuckDBPyConnection) -> int:
    """How many events a chunk holds under the connection's memory limit: `CHUNK` a GiB, at most `CHUNK`."""
    shown_limit = str(conn.execute("SELECT current_setting('memory_limit')").fetchall()[0][0])
    found = _LIMIT.fullmatch(shown_limit.strip())
    if found is None:  # a limit DuckDB shows otherwise: its own default is most of the machine
        return CHUNK
    limit = float(found.group(1)) * _UNITS[found.group(2)]
    return max(1, min(CHUNK, int(CHUNK * limit / (1 << 30))))


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
        _recount(conn, "misplaced")
    conn.execute("DROP TABLE misplaced")


def _recount(conn: duckdb.DuckDBPyConnection, runs: str) -> None:
    """Count the frame-tree children of every span of the runs in table `runs` again."""
    if conn.execute(f"SELECT count(*) FROM {runs}").fetchall()[0][0]:
        conn.execute(
            "CREATE OR REPLACE TEMP TABLE recount AS "
            f"SELECT trace_id, span_id FROM spans WHERE trace_id IN (SELECT trace_id FROM {runs})"
        )
        conn.execute(RECOUNT.replace("touched_traces", runs))
        conn.execute("DROP TABLE recount")
