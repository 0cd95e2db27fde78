"""The SQL a span is derived with, shared by the derive of a whole load and the streamed one.

`span_projection` makes a span's columns from its grouped events, its first event and its end event;
`GROUPED` groups a scope of events by span; `LOG_NAMES` names a log line's instant span by its message;
`REWALK` places every span of some traces again by a walk down from their roots; `RECOUNT` counts the
frame-tree children of some spans.
"""

from __future__ import annotations

# Spans the frame tree looks through: a prompt loop, a model call (and every instant).
HIDDEN_KINDS = ("promptAgent", "model:call")

# Orders a span's events start first, then its point events, then its end; `% POINT` gives back the id.
POINT = 1 << 61
RANK = f"""
    CASE WHEN type LIKE '%:start' THEN event_id
         WHEN type LIKE '%:end' THEN event_id + {2 * POINT}
         ELSE event_id + {POINT} END
"""


def shown(alias: str = "") -> str:
    """Whether the span (of `alias`, when given) is a frame of the tree: not an instant, not of a kind it
    looks through. One rule for the walks that place spans and for the counts of shown spans."""
    column = f"{alias}." if alias else ""
    return f"NOT {column}instant AND {column}kind NOT IN {HIDDEN_KINDS}"


SHOWN = shown()


def walk_down(source: str) -> str:
    """The recursive step of a `walk(trace_id, span_id, depth, frame_parent_id, shown)`: each span of
    `source` under a placed one, a level deeper, its frame parent the nearest shown span above it."""
    return f"""
        SELECT c.trace_id, c.span_id, w.depth + 1,
               CASE WHEN w.shown THEN w.span_id ELSE w.frame_parent_id END,
               {shown("c")}
        FROM walk w JOIN {source} c ON c.trace_id = w.trace_id AND c.parent_span_id = w.span_id
        WHERE w.depth < 100000"""


def span_projection(g: str, f: str, e: str) -> str:
    """The columns of a derived span: `g` its events grouped (`start_id`, `end_id`, `min_ts`, `max_ts`,
    `n`, `first_id`), `f` its first event and `e` its end event (columns as in `events`)."""
    return f"""
        {g}.trace_id, {g}.span_id, {f}.parent_span_id,
        CASE WHEN {g}.start_id IS NOT NULL THEN regexp_replace({f}.type, ':start$', '')
             WHEN {g}.end_id IS NOT NULL THEN regexp_replace({e}.type, ':end$', '')
             ELSE {f}.type END AS kind,
        {g}.start_id IS NULL AND {g}.end_id IS NULL AS instant,
        coalesce({f}.label, regexp_replace({f}.type, ':(start|end)$', '')) AS name,
        coalesce({f}.agent_id, {e}.agent_id) AS agent_id,
        coalesce({f}.call_id, {e}.call_id) AS call_id,
        CASE WHEN {g}.start_id IS NOT NULL THEN {f}.ts ELSE {g}.min_ts END AS start_ts,
        CASE WHEN {g}.end_id IS NOT NULL THEN {e}.ts WHEN {g}.start_id IS NULL THEN {g}.max_ts END AS end_ts,
        CASE WHEN {g}.end_id IS NOT NULL THEN
                 CASE WHEN {e}.success = false OR {e}.error IS NOT NULL THEN 'failed' ELSE 'completed' END
             WHEN {g}.start_id IS NOT NULL THEN 'running'
             WHEN {f}.type = 'error' OR {f}.success = false OR {f}.error IS NOT NULL THEN 'failed'
             ELSE 'completed' END AS status,
        coalesce({e}.error, {f}.error) AS error,
        coalesce({e}.content_hash, {f}.content_hash) AS content_hash,
        coalesce({e}.cache, {f}.cache) AS cache,
        {g}.start_id, {g}.end_id, {g}.n AS events, {g}.first_id
    """


# A span's events grouped: `first_id` is its first event in RANK order.
GROUPED = f"""
    SELECT trace_id, span_id,
           min({RANK}) % {POINT} AS first_id,
           min(event_id) FILTER (WHERE type LIKE '%:start') AS start_id,
           max(event_id) FILTER (WHERE type LIKE '%:end') AS end_id,
           min(ts) AS min_ts, max(ts) AS max_ts, count(*) AS n
"""


def log_name(body: str) -> str:
    """A log line's name: the message of its event's JSON `body` (NULL when it has no text message)."""
    return f"CASE WHEN json_type({body}, 'message') = 'VARCHAR' THEN left({body}->>'message', 200) END"


# The events of log lines: an instant span's (neither a start nor an end), but not budget updates.
LOG_EVENTS = "type NOT LIKE '%:start' AND type NOT LIKE '%:end' AND type <> 'budget:update'"

# A log line's instant span is called by its message (not a column: it is rare, and costly to read).
# The message test is in SET, not WHERE: as a WHERE term DuckDB pushes it into the scan of `events`,
# which then parses every stored body before the join picks the few it needs (an append to a store of
# a million events paid ~250 ms for it). The events are chosen by type first: DuckDB 1.5 otherwise
# reads every body of a load's uncommitted events for the join (1.6 s a million events, now 0.02 s).
LOG_NAMES = f"""
    UPDATE derived SET name = coalesce({log_name("ev.body")}, derived.name)
    FROM (SELECT event_id, body FROM events WHERE {LOG_EVENTS}) ev
    WHERE derived.instant AND derived.kind <> 'budget:update' AND ev.event_id = derived.first_id
"""

# Frame-tree child counts of the stored spans in `recount`, from what is stored now.
RECOUNT = f"""
    UPDATE spans SET frame_children = fresh.n
    FROM (
        SELECT r.trace_id, r.span_id, coalesce(k.n, 0) AS n
        FROM recount r
        LEFT JOIN (
            SELECT trace_id, frame_parent_id, count(*) AS n FROM spans
            WHERE trace_id IN (SELECT trace_id FROM touched_traces) AND {SHOWN}
              AND frame_parent_id IN (SELECT span_id FROM recount)
            GROUP BY 1, 2
        ) k ON k.trace_id = r.trace_id AND k.frame_parent_id = r.span_id
    ) fresh
    WHERE spans.trace_id = fresh.trace_id AND spans.span_id = fresh.span_id AND spans.frame_children <> fresh.n
"""

# The whole-trace walk, for when stored spans may sit under a span that just changed: every span of
# the touched traces placed as a walk down from their roots places it (one caught in a parent cycle,
# which no walk from a root reaches, is a root), as a derive of the whole trace at once would.
REWALK = f"""
    UPDATE spans SET depth = walk.depth, frame_parent_id = walk.frame_parent_id
    FROM (
        WITH RECURSIVE scope AS (
            SELECT trace_id, span_id, parent_span_id, kind, instant FROM spans
            WHERE trace_id IN (SELECT trace_id FROM {{traces}})
        ),
        walk(trace_id, span_id, depth, frame_parent_id, shown) AS (
            SELECT s.trace_id, s.span_id, 0, NULL::VARCHAR, {shown("s")}
            FROM scope s ANTI JOIN scope p ON p.trace_id = s.trace_id AND p.span_id = s.parent_span_id
            UNION ALL {walk_down("scope")}
        )
        SELECT s.trace_id, s.span_id, coalesce(w.depth, 0) AS depth, w.frame_parent_id
        FROM scope s LEFT JOIN walk w USING (trace_id, span_id)
    ) walk
    WHERE spans.trace_id = walk.trace_id AND spans.span_id = walk.span_id
      AND (spans.depth <> walk.depth OR spans.frame_parent_id IS DISTINCT FROM walk.frame_parent_id)
"""
