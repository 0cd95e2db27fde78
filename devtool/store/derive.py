"""Spans and run summaries, derived from events in SQL after every load or append.

A span is the events that share a `(trace_id, span_id)`:
- a `X:start` and its `X:end` make a span of kind `X`; a start without its end yet is `running`;
  an end without its start (a trace cut at the front) is kept, starting at its first event;
- events of other types with the span id of a start/end pair belong to that span (a `sys:log`
  inside a tool batch); those with a span id of their own make an `instant` span of their type,
  whose `start_event_id` is its (first) event;
- `failed` when its end (or its instant event) says `success: false`, carries an error, or is an
  `error` event.

`depth` (0 for a root) and `frame_parent_id` (the nearest ancestor the frame tree shows: all but
`HIDDEN_KINDS` and instants) come from a recursive walk down the new spans, starting from those whose
parent is stored already (or missing: a root). A span has one parent, so a walk down from the roots
never meets a parent cycle; spans caught in one stay roots. `frame_children` counts the spans the
frame tree shows under a span, so a page of a tree needs no counting query.

`refresh(conn, after_event_id)` brings spans and runs up to date with the events whose id is
greater than `after_event_id` (of some traces only, if asked), in the caller's transaction. When
those events start new traces (a file load, a new live run) it reads only them. When they add to
stored traces (live ingest, a second file of one trace) it derives the new spans they make from
them alone, re-derives the stored spans they touch from all their events, walks the whole trace
again only when a stored span's parent or depth may have changed, and moves the runs' summaries by
what changed (`run_summary.update`); a load of new runs counts their summaries whole
(`run_summary.rebuild`). The runs' calls are fingerprinted with them (`call_prints.update`), but for
a live derive, which leaves them to the index step after it (`Store.index_backlog`).
"""

from __future__ import annotations

import duckdb

from devtool.store import call_prints, derive_stream, list_param, run_summary
from devtool.store.span_sql import (
    GROUPED,
    LOG_EVENTS,
    LOG_NAMES,
    RECOUNT,
    REWALK,
    SHOWN,
    log_name,
    shown,
    span_projection,
    walk_down,
)

# `{scope}`: the events to derive spans of; `{materialized}`: whether to read them once (a few) or
# in each of the three places they are read (a load's: millions).
_DERIVE = f"""
    CREATE OR REPLACE TEMP TABLE derived AS
    WITH scope AS {{materialized}} ({{scope}}),
    grouped AS ({GROUPED} FROM scope GROUP BY trace_id, span_id)
    SELECT {span_projection("g", "f", "e")}
    FROM grouped g
    JOIN scope f ON f.event_id = g.first_id
    LEFT JOIN scope e ON e.event_id = g.end_id
"""

# Depth and frame parent of every derived span: seeded from the stored parent (or none: a root).
_PLACE = f"""
    CREATE OR REPLACE TEMP TABLE placed AS
    WITH RECURSIVE walk(trace_id, span_id, depth, frame_parent_id, shown) AS (
        SELECT d.trace_id, d.span_id,
               coalesce(p.depth + 1, 0),
               CASE WHEN p.span_id IS NULL THEN NULL
                    WHEN {shown("p")} THEN p.span_id
                    ELSE p.frame_parent_id END,
               {shown("d")}
        FROM derived d
        ANTI JOIN derived q ON q.trace_id = d.trace_id AND q.span_id = d.parent_span_id
        LEFT JOIN spans p ON p.trace_id = d.trace_id AND p.span_id = d.parent_span_id
        UNION ALL {walk_down("derived")}
    )
    SELECT trace_id, span_id, depth, frame_parent_id FROM walk
"""

# The frame-tree children each `derived` span has among the new shown spans (`placed`).
_KIDS = f"""
    SELECT c.trace_id, c.frame_parent_id AS span_id, count(*) AS n
    FROM placed c JOIN (SELECT * FROM derived WHERE {SHOWN}) x USING (trace_id, span_id)
    WHERE c.frame_parent_id IS NOT NULL
    GROUP BY 1, 2
"""

# The rows of `spans` for `derived`, placed by `placed`, with `{kids}` (`_KIDS`, or a CTE of it).
_STORED = """
    SELECT d.trace_id, d.span_id, d.parent_span_id, d.kind, d.instant, d.name, d.agent_id, d.call_id,
           d.start_ts, d.end_ts, d.status, d.error, d.content_hash, d.cache,
           CASE WHEN d.instant THEN d.first_id ELSE d.start_id END, d.end_id, d.events,
           coalesce(p.depth, 0), p.frame_parent_id, coalesce(k.n, 0)
    FROM derived d
    JOIN touched_traces t ON t.trace_id = d.trace_id
    LEFT JOIN placed p ON p.trace_id = d.trace_id AND p.span_id = d.span_id
    LEFT JOIN {kids} k ON k.trace_id = d.trace_id AND k.span_id = d.span_id
    ORDER BY t.trace_no, d.start_ts
"""

_INSERT = "INSERT INTO spans " + _STORED.format(kids=f"({_KIDS})")

# New runs of a live derive in one statement (`_DERIVE`, `LOG_NAMES`, `_PLACE` and `_INSERT` as CTEs):
# a small run's derive is DuckDB binding and planning its statements, not running them (BENCHMARKS.md,
# issue 43), and a page of the run waits for it. Its events are few: they are read once.
_NEW_LIVE = f"""
    INSERT INTO spans
    WITH RECURSIVE
    scope AS MATERIALIZED ({{scope}}),
    grouped AS ({GROUPED} FROM scope GROUP BY trace_id, span_id),
    spanned AS MATERIALIZED (
        SELECT {span_projection("g", "f", "e")}
        FROM grouped g JOIN scope f ON f.event_id = g.first_id LEFT JOIN scope e ON e.event_id = g.end_id
    ),
    logs AS (SELECT event_id, {log_name("body")} AS message FROM events WHERE {{logs}} AND {LOG_EVENTS}),
    derived AS MATERIALIZED (
        SELECT s.* REPLACE (
            CASE WHEN s.instant AND s.kind <> 'budget:update' THEN coalesce(l.message, s.name) ELSE s.name END AS name
        )
        FROM spanned s LEFT JOIN logs l ON l.event_id = s.first_id
    ),
    walk(trace_id, span_id, depth, frame_parent_id, shown) AS (
        SELECT d.trace_id, d.span_id, 0, NULL::VARCHAR, {shown("d")}
        FROM derived d
        ANTI JOIN derived q ON q.trace_id = d.trace_id AND q.span_id = d.parent_span_id
        UNION ALL {walk_down("derived")}
    ),
    placed AS MATERIALIZED (SELECT trace_id, span_id, depth, frame_parent_id FROM walk),
    kids AS ({_KIDS})
    {_STORED.format(kids="kids")}
"""

# Stored spans whose parent was just (re)derived with a different place or kind: their subtree moves.
_MOVED = f"""
    SELECT count(*) FROM spans s
    JOIN derived d ON d.trace_id = s.trace_id AND d.span_id = s.parent_span_id
    LEFT JOIN replaced r ON r.trace_id = d.trace_id AND r.span_id = d.span_id
    LEFT JOIN placed p ON p.trace_id = d.trace_id AND p.span_id = d.span_id
    WHERE NOT EXISTS (SELECT 1 FROM derived x WHERE x.trace_id = s.trace_id AND x.span_id = s.span_id)
      AND (r.span_id IS NULL OR r.depth <> coalesce(p.depth, 0)
           OR r.frame_parent_id IS DISTINCT FROM p.frame_parent_id
           OR ({shown("r")}) <> ({shown("d")}))
"""


def refresh(
    conn: duckdb.DuckDBPyConnection,
    after_event_id: int,
    *,
    traces: tuple[str, ...] | None = None,
    chunk: int | None = None,
    prints: bool = True,
) -> tuple[int, tuple[str, ...]]:
    """Derive spans and run summaries for the events with ids above `after_event_id` (of `traces` only,
    when given: the derive of a live backlog, whose range may hold a load's events, derived already).
    More than `chunk` events of new runs (by default as many as DuckDB's memory limit fits,
    `derive_stream.chunk_for`) are derived `chunk` at a time (`derive_stream`).

    `prints=False` leaves the runs' call fingerprints to the caller (a live derive: `Store.index_backlog`
    makes them after it commits, with the search words, so that a run is visible sooner).

    Returns how many spans were (re)derived (of those the pages show and count: not instants, not
    `HIDDEN_KINDS`) and the ids of the traces they belong to.
    """
    new = f"event_id > {int(after_event_id)}"
    only = "" if traces is None else f" AND trace_id IN (SELECT unnest({list_param.of('traces')}))"
    conn.execute(
        # Numbered in order: spans are stored by trace, then time, and a number sorts faster than the id
        # (a sort of a load's spans compares a constant string at every step otherwise).
        "CREATE OR REPLACE TEMP TABLE touched_traces AS "
        "SELECT trace_id, row_number() OVER (ORDER BY trace_id) AS trace_no "
        f"FROM (SELECT DISTINCT trace_id FROM events WHERE {new}{only})",
        {} if traces is None else {"traces": list_param.values(traces)},
    )
    if traces is not None:
        new += " AND trace_id IN (SELECT trace_id FROM touched_traces)"
    stored = conn.execute("SELECT count(*) FROM runs WHERE trace_id IN (SELECT trace_id FROM touched_traces)")
    all_new = stored.fetchall()[0][0] == 0
    incremental = False
    # New runs of a live derive: no span of theirs is stored, so one statement makes them (`_NEW_LIVE`).
    new_live = all_new and traces is not None
    # Only a load of new runs may be streamed: a live derive (`traces`) does not ask DuckDB its limit.
    streamable = all_new and traces is None
    size = (derive_stream.chunk_for(conn) if chunk is None else chunk) if streamable else 0
    last = int(conn.execute("SELECT coalesce(max(event_id), 0) FROM events").fetchall()[0][0]) if streamable else 0
    if streamable and last - after_event_id > size:
        # A big load of new runs: a chunk of events at a time, so memory does not grow with the file.
        derived = derive_stream.derive_new(conn, after_event_id, last, size=size).spans
        if derive_stream.find_duplicates(conn):
            rederive(conn, None)
            conn.execute("DROP TABLE derived; DROP TABLE placed; DROP TABLE replaced")
        derive_stream.fix_places(conn)
    else:
        if new_live:
            # No span of these runs is stored: every parent is among the new spans, or missing (a root).
            # Counted as they are inserted: a statement fewer (a lone trace's derive is its statements).
            inserted = _NEW_LIVE.format(scope=f"SELECT * EXCLUDE (body) FROM events WHERE {new}", logs=new)
            derived = sum(shown for (shown,) in conn.execute(f"{inserted} RETURNING ({SHOWN})::INT").fetchall())
        elif all_new:
            scope = f"SELECT * EXCLUDE (body) FROM events WHERE {new}"
            conn.execute(_DERIVE.format(scope=scope, materialized="NOT MATERIALIZED"))
            conn.execute(LOG_NAMES)
            conn.execute(_PLACE)
            conn.execute(_INSERT)
        else:
            touched = f"SELECT DISTINCT trace_id, span_id FROM events WHERE {new}"
            if traces is not None:
                # A live derive's range starts at its traces' lowest first pending id: a trace derived
                # alone since (a page of it, `Store.derive_backlog`) has events in it derived already,
                # those up to its run's last one, and they are not derived again.
                touched = (
                    "SELECT DISTINCT e.trace_id, e.span_id FROM events e LEFT JOIN runs r USING (trace_id) "
                    f"WHERE {new} AND (r.last_event_id IS NULL OR e.event_id > r.last_event_id)"
                )
            conn.execute(f"CREATE OR REPLACE TEMP TABLE touched_spans AS {touched}")
            moved = rederive(conn, after_event_id)
            run_summary.update(conn, after_event_id, moved=moved)
            conn.execute("DROP TABLE replaced")
            incremental = True
        if not new_live:
            derived = int(conn.execute(f"SELECT count(*) FROM derived WHERE {SHOWN}").fetchall()[0][0])
            conn.execute("DROP TABLE derived; DROP TABLE placed")
    if not incremental:  # every run derived here is new (`all_new`): it has no row to delete
        # A live derive's new runs have no event up to `after_event_id` (the lowest first id it took;
        # an event before it would have been derived into a run); a load's may (live events pending).
        run_summary.rebuild(conn, new=True, after=after_event_id if traces is not None else -1)
    if prints:
        call_prints.update(conn, after_event_id)
    traces = tuple(row[0] for row in conn.execute("SELECT trace_id FROM touched_traces ORDER BY 1").fetchall())
    conn.execute("DROP TABLE touched_traces")
    return derived, traces


def rederive(conn: duckdb.DuckDBPyConnection, after_event_id: int | None) -> bool:
    """Derive the spans in `touched_spans` (of traces in `touched_traces`) again from all their events,
    move what moved under them, and recount children; leaves `derived` and `placed` (the spans as they
    are now) and `replaced` (the stored ones as they were). Returns whether other stored spans moved
    with them (to another depth or frame parent).

    With `after_event_id` (every event up to it is derived), a span not stored has no event up to it
    (else it would be stored): its events are read from those after it only, and the events up to
    it are read for the stored spans alone, when there are any. A live append's new spans, most of
    what it touches, then cost what their events do, not what the run does.
    """
    touched = "(trace_id, span_id) IN (SELECT (trace_id, span_id) FROM touched_spans)"
    conn.execute(
        f"CREATE OR REPLACE TEMP TABLE replaced AS "
        "SELECT trace_id, span_id, kind, instant, depth, frame_parent_id, name, status, parent_span_id, start_ts "
        f"FROM spans WHERE {touched}"
    )
    stored = conn.execute("SELECT count(*) FROM replaced").fetchall()[0][0] > 0
    conn.execute(f"DELETE FROM spans WHERE {touched}")
    of_runs = "SELECT * EXCLUDE (body) FROM events WHERE trace_id IN (SELECT trace_id FROM touched_traces) AND"
    if after_event_id is None:
        scope = f"{of_runs} {touched}"
    else:
        scope = f"{of_runs} event_id > {int(after_event_id)} AND {touched}"
        if stored:
            replaced = "(trace_id, span_id) IN (SELECT (trace_id, span_id) FROM replaced)"
            scope = f"{scope} AND NOT {replaced} UNION ALL {of_runs} {replaced}"
    conn.execute(_DERIVE.format(scope=scope, materialized="MATERIALIZED"))
    conn.execute(LOG_NAMES)
    conn.execute(_PLACE)
    moved = conn.execute(_MOVED).fetchall()[0][0]
    conn.execute(_INSERT)
    if moved:
        conn.execute(REWALK.format(traces="touched_traces"))
        recount = "SELECT trace_id, span_id FROM spans WHERE trace_id IN (SELECT trace_id FROM touched_traces)"
    else:
        # Parents that gained or lost a child, and the re-derived spans (whose stored children _INSERT missed).
        recount = (
            "SELECT trace_id, frame_parent_id FROM placed UNION SELECT trace_id, frame_parent_id FROM replaced "
            "UNION SELECT trace_id, span_id FROM derived"
        )
    conn.execute(f"CREATE OR REPLACE TEMP TABLE recount AS SELECT * FROM ({recount}) r(trace_id, span_id)")
    conn.execute(RECOUNT)
    conn.execute("DROP TABLE touched_spans; DROP TABLE recount")
    return bool(moved)
