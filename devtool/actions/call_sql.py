"""A run's calls as fingerprints, in SQL: what two runs are compared on (`actions/compare.py`).

A call is a frame (the run's root, an agent), a model turn or a tool call, known by its callId (the
same agent call has the same callId in a replay or a fork of the run, since callIds count calls in
order within their parent). For each, hashes (DuckDB's 64-bit `hash`) of what went in (an agent's
props, a turn's or tool's contentHash), what came out (an agent's result, a turn's message, a tool's
output), its error, and a frame's memory (its last generation's; the root's from `runWith:end`),
with its place in the run (`pos`: calls ordered by their end, and a call ends before its parent, so
the order puts the innermost first) and where its values are (`event_id`, a tool's `idx` in its
batch, `mem_ev` the event holding the memory), so that only the calls a reader shows have their
bodies read again. Reading them decompresses the run's end events: the one costly part of a compare.
"""

from __future__ import annotations

FRAME, LIVE, CACHED = 0, 1, 2  # `served` per call: a frame, a call that ran, a call served from the journal


def calls_sql(name: str, trace_param: str) -> str:
    """CTEs (`{name}_gens`, `{name}_frames`, `{name}_all`, `{name}`) whose last, `{name}`, holds run
    `${trace_param}`'s calls: `call_id, pos, event_id, idx, mem_ev, h_in, h_out, h_err, h_mem, served`."""
    t = f"${trace_param}"
    return f"""
{name}_gens AS (
    SELECT parent_span_id AS span, max(event_id) AS mem_ev, arg_max(hash(body->'$.memory'), event_id) AS h_mem
    FROM events WHERE trace_id = {t} AND type = 'generation:end' GROUP BY 1
),
{name}_frames AS (
    SELECT CASE WHEN type = 'runWith:end' THEN 'root' ELSE call_id END AS call_id, event_id, type, span_id,
           content_hash, cache, json_extract(body, ['$.props', '$.result', '$.error', '$.message', '$.memory']) AS x
    FROM events WHERE trace_id = {t} AND type IN ('runWith:end', 'agent:end', 'turn:end')
),
{name}_all AS (
    SELECT f.call_id, f.event_id, -1 AS idx,
           CASE WHEN f.type = 'turn:end' THEN hash(f.content_hash) ELSE hash(x[1]) END AS h_in,
           -- A root with no output (a `record` block sets none unless told) has none to compare.
           CASE WHEN f.type = 'runWith:end' AND coalesce(CAST(x[2] AS VARCHAR), 'null') = 'null' THEN NULL
                ELSE hash(CASE WHEN f.type = 'turn:end' THEN x[4] ELSE x[2] END) END AS h_out,
           hash(x[3]) AS h_err,
           CASE WHEN f.type = 'runWith:end' THEN hash(x[5]) ELSE g.h_mem END AS h_mem,
           CASE WHEN f.type = 'runWith:end' THEN f.event_id ELSE g.mem_ev END AS mem_ev,
           CASE WHEN f.type <> 'turn:end' THEN {FRAME} WHEN f.cache THEN {CACHED} ELSE {LIVE} END AS served
    FROM {name}_frames f LEFT JOIN {name}_gens g ON g.span = f.span_id AND f.type = 'agent:end'
    UNION ALL
    SELECT coalesce(r->>'callPath', r->>'callId'), event_id, i - 1,
           hash(r->>'toolName', r->'input'), hash(r->'output'), hash(r->'error'), NULL, NULL,
           CASE WHEN (r->>'cache') = 'true' THEN {CACHED} ELSE {LIVE} END
    FROM (SELECT event_id, unnest(t) AS r, generate_subscripts(t, 1) AS i
          FROM (SELECT event_id, CAST(json_extract(body, '$.toolResults') AS JSON[]) AS t
                FROM events WHERE trace_id = {t} AND type = 'tools:execute:end'))
),
{name} AS (
    SELECT call_id, row_number() OVER (ORDER BY event_id, idx) AS pos, event_id, idx, coalesce(mem_ev, -1) AS mem_ev,
           h_in, h_out, h_err, coalesce(h_mem, 0) AS h_mem, served
    FROM {name}_all WHERE call_id IS NOT NULL
    QUALIFY row_number() OVER (PARTITION BY call_id ORDER BY event_id DESC, idx DESC) = 1
)"""  # noqa: S608 - names and parameter markers of ours, no value
