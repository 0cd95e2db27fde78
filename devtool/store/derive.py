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
stored traces (live ingest, a second file of one trace) it re-derives the spans they touch from all
their events, and walks the whole trace again only when a stored span's parent or depth may have
changed.
"""

from __future__ import annotations

import duckdb

from devtool.store import derive_stream
from devtool.store.span_sql import (
    GROUPED,
    HIDDEN_KINDS,
    LOG_NAMES,
    RECOUNT,
    REWALK,
    SHOWN,
    span_projection,
)

# The end of a model request, over `events` columns: a `model:call`'s, or a turn's that counts its own
# tokens (an OpenTelemetry chat span is the request itself; the DevTool's own turns never carry usage).
MODEL_REQUEST_END = "(type = 'model:call:end' OR (type = 'turn:end' AND prompt_tokens IS NOT NULL))"

_DERIVE = f"""
    CREATE OR REPLACE TEMP TABLE derived AS
    WITH scope AS NOT MATERIALIZED (SELECT * EXCLUDE (body) FROM events WHERE {{events}}),
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
                    WHEN NOT p.instant AND p.kind NOT IN {HIDDEN_KINDS} THEN p.span_id
                    ELSE p.frame_parent_id END,
               NOT d.instant AND d.kind NOT IN {HIDDEN_KINDS}
        FROM derived d
        ANTI JOIN derived q ON q.trace_id = d.trace_id AND q.span_id = d.parent_span_id
        LEFT JOIN spans p ON p.trace_id = d.trace_id AND p.span_id = d.parent_span_id
        UNION ALL
        SELECT c.trace_id, c.span_id, w.depth + 1,
               CASE WHEN w.shown THEN w.span_id ELSE w.frame_parent_id END,
               NOT c.instant AND c.kind NOT IN {HIDDEN_KINDS}
        FROM walk w JOIN derived c ON c.trace_id = w.trace_id AND c.parent_span_id = w.span_id
        WHERE w.depth < 100000
    )
    SELECT trace_id, span_id, depth, frame_parent_id FROM walk
"""

_INSERT = f"""
    INSERT INTO spans
    SELECT d.trace_id, d.span_id, d.parent_span_id, d.kind, d.instant, d.name, d.agent_id, d.call_id,
           d.start_ts, d.end_ts, d.status, d.error, d.content_hash, d.cache,
           CASE WHEN d.instant THEN d.first_id ELSE d.start_id END, d.end_id, d.events,
           coalesce(p.depth, 0), p.frame_parent_id, coalesce(k.n, 0)
    FROM derived d
    LEFT JOIN placed p USING (trace_id, span_id)
    LEFT JOIN (
        SELECT c.trace_id, c.frame_parent_id AS span_id, count(*) AS n
        FROM placed c JOIN (SELECT * FROM derived WHERE {SHOWN}) x USING (trace_id, span_id)
        WHERE c.frame_parent_id IS NOT NULL
        GROUP BY 1, 2
    ) k USING (trace_id, span_id)
    ORDER BY d.trace_id, d.start_ts
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
           OR (NOT r.instant AND r.kind NOT IN {HIDDEN_KINDS}) <> (NOT d.instant AND d.kind NOT IN {HIDDEN_KINDS}))
"""

# A run's counts are of the spans its page shows (the frame tree and the timeline): a log line, an error
# event or a model call inside a turn is not one more span, and the runs list, the run's header and
# the load's summary all say the same number.
_RUNS = f"""
    INSERT INTO runs
    SELECT
        e.trace_id,
        coalesce(s.name, e.trace_id),
        e.started, e.ended,
        coalesce(s.status, 'completed'),
        e.n, coalesce(s.spans, 0), coalesce(s.agents, 0), coalesce(s.failed, 0), coalesce(s.running, 0),
        e.prompt_tokens, e.completion_tokens,
        coalesce(s.agent_ids, ''),
        e.first_id, e.last_id,
        e.cost_micro_usd, e.unpriced_calls,
        coalesce(s.prompts, 0), coalesce(s.tools, 0), e.source_id, coalesce(s.depth, 0)
    FROM (
        SELECT trace_id, count(*) AS n, min(ts) AS started, max(ts) AS ended,
               coalesce(sum(prompt_tokens) FILTER (WHERE {MODEL_REQUEST_END}), 0) AS prompt_tokens,
               coalesce(sum(completion_tokens) FILTER (WHERE {MODEL_REQUEST_END}), 0) AS completion_tokens,
               min(event_id) AS first_id, max(event_id) AS last_id, arg_min(source_id, event_id) AS source_id,
               sum(cost_micro_usd) FILTER (WHERE {MODEL_REQUEST_END}) AS cost_micro_usd,
               count(*) FILTER (WHERE {MODEL_REQUEST_END} AND success AND cost_micro_usd IS NULL) AS unpriced_calls
        FROM events WHERE trace_id IN (SELECT trace_id FROM touched_traces)
        GROUP BY trace_id
    ) e
    LEFT JOIN (
        SELECT trace_id,
               coalesce(arg_min(name, depth * 1e15 + start_ts) FILTER (WHERE kind = 'agent'),
                        arg_min(name, start_ts) FILTER (WHERE depth = 0 AND NOT instant)) AS name,
               -- A span whose parent is not stored has a parent still open: OpenTelemetry sends a span
               -- when it ends, so its children come first and the run runs until its root arrives.
               CASE WHEN bool_or(status = 'running' OR parent_span_id IS NOT NULL)
                             FILTER (WHERE depth = 0 AND NOT instant) THEN 'running'
                    WHEN bool_or(status = 'failed') FILTER (WHERE depth = 0 AND NOT instant) THEN 'failed'
                    ELSE 'completed' END AS status,
               count(*) FILTER (WHERE {SHOWN}) AS spans,
               count(*) FILTER (WHERE kind = 'agent') AS agents,
               count(*) FILTER (WHERE status = 'failed' AND {SHOWN}) AS failed,
               count(*) FILTER (WHERE status = 'running' AND {SHOWN}) AS running,
               string_agg(DISTINCT agent_id, ' ' ORDER BY agent_id) FILTER (WHERE kind = 'agent') AS agent_ids,
               count(*) FILTER (WHERE kind = 'turn') AS prompts,
               coalesce(sum(len(string_split(name, ', '))) FILTER (WHERE kind = 'tools:execute'), 0) AS tools,
               max(depth) AS depth
        FROM spans WHERE trace_id IN (SELECT trace_id FROM touched_traces)
        GROUP BY trace_id
    ) s USING (trace_id)
"""


def refresh(
    conn: duckdb.DuckDBPyConnection,
    after_event_id: int,
    *,
    traces: tuple[str, ...] | None = None,
    chunk: int = derive_stream.CHUNK,
) -> tuple[int, tuple[str, ...]]:
    """Derive spans and run summaries for the events with ids above `after_event_id` (of `traces` only,
    when given: the derive of a live backlog, whose range may hold a load's events, derived already).
    More than `chunk` events of new runs are derived `chunk` at a time (`derive_stream`).

    Returns how many spans were (re)derived (of those the pages show and count: not instants, not
    `HIDDEN_KINDS`) and the ids of the traces they belong to.
    """
    new = f"event_id > {int(after_event_id)}"
    only = "" if traces is None else " AND trace_id IN (SELECT unnest($traces))"
    conn.execute(
        f"CREATE OR REPLACE TEMP TABLE touched_traces AS SELECT DISTINCT trace_id FROM events WHERE {new}{only}",
        {} if traces is None else {"traces": list(traces)},
    )
    if traces is not None:
        new += " AND trace_id IN (SELECT trace_id FROM touched_traces)"
    stored = conn.execute("SELECT count(*) FROM runs WHERE trace_id IN (SELECT trace_id FROM touched_traces)")
    all_new = stored.fetchall()[0][0] == 0
    last = int(conn.execute("SELECT coalesce(max(event_id), 0) FROM events").fetchall()[0][0])
    if all_new and traces is None and last - after_event_id > chunk:
        # A big load of new runs: a chunk of events at a time, so memory does not grow with the file.
        derived = derive_stream.derive_new(conn, after_event_id, last, size=chunk).spans
        if derive_stream.find_duplicates(conn):
            rederive(conn)
            conn.execute("DROP TABLE derived; DROP TABLE placed")
        derive_stream.fix_places(conn)
    else:
        if all_new:
            conn.execute(_DERIVE.format(events=new))
            conn.execute(LOG_NAMES.format(where="true"))
            conn.execute(_PLACE)
            conn.execute(_INSERT)
        else:
            touched = f"SELECT DISTINCT trace_id, span_id FROM events WHERE {new}"
            conn.execute(f"CREATE OR REPLACE TEMP TABLE touched_spans AS {touched}")
            rederive(conn)
        derived = int(conn.execute(f"SELECT count(*) FROM derived WHERE {SHOWN}").fetchall()[0][0])
        conn.execute("DROP TABLE derived; DROP TABLE placed")
    conn.execute("DELETE FROM runs WHERE trace_id IN (SELECT trace_id FROM touched_traces)")
    conn.execute(_RUNS)
    traces = tuple(row[0] for row in conn.execute("SELECT trace_id FROM touched_traces ORDER BY 1").fetchall())
    conn.execute("DROP TABLE touched_traces")
    return derived, traces


def rederive(conn: duckdb.DuckDBPyConnection) -> None:
    """Derive the stored spans in `touched_spans` again from all their events (of traces in
    `touched_traces`), move what moved under them, and recount children; leaves `derived` and `placed`."""
    touched = "(trace_id, span_id) IN (SELECT (trace_id, span_id) FROM touched_spans)"
    conn.execute(
        f"CREATE OR REPLACE TEMP TABLE replaced AS "
        f"SELECT trace_id, span_id, kind, instant, depth, frame_parent_id FROM spans WHERE {touched}"
    )
    conn.execute(f"DELETE FROM spans WHERE {touched}")
    conn.execute(_DERIVE.format(events=f"trace_id IN (SELECT trace_id FROM touched_traces) AND {touched}"))
    conn.execute(LOG_NAMES.format(where="true"))
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
    conn.execute("DROP TABLE touched_spans; DROP TABLE replaced; DROP TABLE recount")
