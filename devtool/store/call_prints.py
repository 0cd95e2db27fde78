"""Each run's calls as fingerprints, stored with the run: what two runs are compared on.

A call is a frame (the run's root, an agent), a model turn or a tool call, known by its callId (the
same agent call has the same callId in a replay or a fork of the run, since callIds count calls in
order within their parent). `call_prints` holds, for each, hashes (DuckDB's 64-bit `hash`) of what
went in (an agent's props, a turn's or tool's contentHash), what came out (an agent's result, a
turn's message, a tool's output), its error, and a frame's memory (its last generation's; the
root's from `runWith:end`), with its place in the run (`pos`: calls ordered by their end, and a call
ends before its parent, so the order puts the innermost first; `POS`, made from where the end is in
the run, so a call keeps its place as long as its end is the same one and goes after the run's
others when it ends again, with no look at what was printed before) and where its values are
(`event_id`, a tool's `idx` in its batch, `mem_ev` the event holding the memory), so that a compare
(`actions/compare.py`) joins two small tables and reads bodies only for the calls a reader shows.

Made where spans are (`derive.refresh`, in the same transaction): a load prints the runs it
stores, and a live batch (or a second file of a run) prints the calls its events end, replacing a
call that ended again, and again the agents whose memory a new generation changed; a call new to
the run is placed after the run's others. Calls fall in `BUCKETS` buckets by a hash of their
callId, and `print_buckets` keeps each bucket's count and digest (an XOR of its calls' hashes), so a
compare joins only the calls of the buckets whose digests differ (`split`, `bucket_prints`).
`printed_runs` lists the runs printed whole: a run stored before the tables existed (an older
store) is not, nor becomes so as it grows, and `run_prints` then reads its calls from its events,
as every compare did before (right, and slower: seconds a million events), until the server's
background indexer prints it once it stops growing (`print_older`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import duckdb

from devtool.store import list_param

FRAME, LIVE, CACHED = 0, 1, 2  # `served` per call: a frame, a call that ran, a call served from the journal

COLUMNS = "call_id, pos, event_id, idx, mem_ev, h_in, h_out, h_err, h_mem, served"
# A call's place: its end's offset in its run, then its place in its batch (`idx`, -1 for a frame's
# end), over `{run}` holding the run's first event id. A dense count of the run's calls needed a window
# over all of a load's prints and a join to those printed before: a second ten-million-event run's
# prints ran out of DuckDB's 1 GiB there (BENCHMARKS.md, compare at 10M).
POS_STEP = 1 << 20  # more than a batch ever holds
POS = "(event_id - {run}) * " + str(POS_STEP) + " + idx + 2"
# Two runs' buckets with equal digests hold the same calls, alike: only the others are joined.
BUCKETS = 4096
BUCKET_OF = f"hash(call_id) % {BUCKETS}"

# The fingerprint rows of the end events chosen by `{frames}` (a condition on `events`), with the
# memory of their agents from the generation ends chosen by `{gens}`; a call's latest end wins.
_ROWS = """
WITH frames AS (
    SELECT trace_id, CASE WHEN type = 'runWith:end' THEN 'root' ELSE call_id END AS call_id, event_id, type,
           span_id, content_hash, cache,
           json_extract(body, ['$.props', '$.result', '$.error', '$.message', '$.memory']) AS x
    FROM events WHERE type IN ('runWith:end', 'agent:end', 'turn:end') AND ({frames})
),
gens AS (
    SELECT trace_id, parent_span_id AS span, max(event_id) AS mem_ev,
           arg_max(hash(body->'$.memory'), event_id) AS h_mem
    FROM events WHERE type = 'generation:end' AND ({gens})
      AND (trace_id, parent_span_id) IN (SELECT (trace_id, span_id) FROM frames WHERE type = 'agent:end')
    GROUP BY 1, 2
),
every AS (
    SELECT f.trace_id, f.call_id, f.event_id, -1 AS idx,
           CASE WHEN f.type = 'turn:end' THEN hash(f.content_hash) ELSE hash(x[1]) END AS h_in,
           -- A root with no output (a `record` block sets none unless told) has none to compare.
           CASE WHEN f.type = 'runWith:end' AND coalesce(CAST(x[2] AS VARCHAR), 'null') = 'null' THEN NULL
                ELSE hash(CASE WHEN f.type = 'turn:end' THEN x[4] ELSE x[2] END) END AS h_out,
           hash(x[3]) AS h_err,
           CASE WHEN f.type = 'runWith:end' THEN hash(x[5]) ELSE g.h_mem END AS h_mem,
           CASE WHEN f.type = 'runWith:end' THEN f.event_id ELSE g.mem_ev END AS mem_ev,
           CASE WHEN f.type <> 'turn:end' THEN {FRAME} WHEN f.cache THEN {CACHED} ELSE {LIVE} END AS served
    -- Only agents' spans are in `gens`. A condition on `f.type` here would make DuckDB 1.5 join by
    -- nested loops (seconds a million events) where the two equalities alone make a hash join.
    FROM frames f LEFT JOIN gens g ON g.trace_id = f.trace_id AND g.span = f.span_id
    UNION ALL
    -- Each result of a batch parsed once, for all its fields (a result of tens of megabytes parsed
    -- once a field would not fit a load's memory).
    SELECT trace_id, coalesce(y[1]->>'$', y[2]->>'$'), event_id, i - 1, hash(y[3]->>'$', y[4]), hash(y[5]),
           hash(y[6]), NULL, NULL, CASE WHEN (y[7]->>'$') = 'true' THEN {CACHED} ELSE {LIVE} END
    FROM (SELECT trace_id, event_id, i,
                 json_extract(r, ['$.callPath', '$.callId', '$.toolName', '$.input', '$.output', '$.error', '$.cache'])
                     AS y
          FROM (SELECT trace_id, event_id, unnest(t) AS r, generate_subscripts(t, 1) AS i
                FROM (SELECT trace_id, event_id, json_extract(body, '$.toolResults[*]') AS t
                      FROM events WHERE type = 'tools:execute:end' AND ({frames}))))
)
SELECT trace_id, call_id, event_id, idx, coalesce(mem_ev, -1) AS mem_ev, h_in, h_out, h_err,
       coalesce(h_mem, 0) AS h_mem, served
FROM every WHERE call_id IS NOT NULL
QUALIFY row_number() OVER (PARTITION BY trace_id, call_id ORDER BY event_id DESC, idx DESC) = 1
"""


def _rows(frames: str, gens: str) -> str:
    return _ROWS.format(frames=frames, gens=gens, FRAME=FRAME, LIVE=LIVE, CACHED=CACHED)


def run_prints(trace_param: str) -> str:
    """SQL of run `${trace_param}`'s fingerprints (`COLUMNS`): the stored ones when it is printed, else
    read from its events."""
    t = f"${trace_param}"
    read = _rows(f"trace_id = {t}", f"trace_id = {t}")
    return f"""
    SELECT {COLUMNS} FROM call_prints WHERE trace_id = {t} AND EXISTS (SELECT 1 FROM printed_runs WHERE trace_id = {t})
    UNION ALL
    SELECT call_id, {POS.format(run=f"(SELECT first_event_id FROM runs WHERE trace_id = {t})")} AS pos, event_id,
           idx, mem_ev, h_in, h_out, h_err, h_mem, served
    FROM ({read}) WHERE NOT EXISTS (SELECT 1 FROM printed_runs WHERE trace_id = {t})
    """


@dataclass(frozen=True, slots=True)
class Split:
    """Two printed runs' buckets: those that differ (to join), the calls of the others (alike in both),
    and run B's calls served from a journal and run live, counted over all its buckets."""

    buckets: tuple[int, ...]
    alike: int
    cached: int
    live: int


def split(cursor: duckdb.DuckDBPyConnection, a: str, b: str) -> Split | None:
    """Runs `a` and `b`'s buckets compared by digest; None unless both are printed."""
    runs = sorted({a, b})
    found = cursor.execute(
        f"SELECT count(*) FROM printed_runs WHERE trace_id IN (SELECT unnest({list_param.of('runs')}))",
        {"runs": list_param.values(runs)},
    )
    if found.fetchall()[0][0] != len(runs):
        return None
    buckets, alike, cached, live = cursor.execute(_SPLIT, {"a": a, "b": b}).fetchall()[0]
    return Split(tuple(buckets or ()), int(alike or 0), int(cached or 0), int(live or 0))


_SPLIT = """
SELECT list(bucket) FILTER (WHERE differs), sum(a_calls) FILTER (WHERE NOT differs), sum(b_cached), sum(b_live)
FROM (
    SELECT bucket, a.calls AS a_calls, b.cached AS b_cached, b.live AS b_live,
           a.calls IS DISTINCT FROM b.calls OR a.digest IS DISTINCT FROM b.digest AS differs
    FROM (SELECT * FROM print_buckets WHERE trace_id = $a) a
    FULL JOIN (SELECT * FROM print_buckets WHERE trace_id = $b) b USING (bucket)
)
"""


def bucket_prints(trace_param: str, buckets: Sequence[int]) -> str:
    """SQL of run `${trace_param}`'s stored fingerprints (`COLUMNS`) in `buckets`, named in the SQL as
    numbers: a list of constants is a filter the scan checks against each row group's bounds (a
    parameter list would be a join, read whole)."""
    listed = ", ".join(str(int(bucket)) for bucket in buckets) or "NULL"
    return f"SELECT {COLUMNS} FROM call_prints WHERE trace_id = ${trace_param} AND bucket IN ({listed})"


def update(conn: duckdb.DuckDBPyConnection, after_event_id: int) -> None:
    """Print the calls that the events after `after_event_id` of the runs in `touched_traces` end
    (or change the memory of), in the caller's transaction: runs new since then whole, printed runs
    by what changed; a run neither new nor printed stays unprinted."""
    after = int(after_event_id)
    conn.execute(
        "CREATE OR REPLACE TEMP TABLE print_runs AS "
        "SELECT trace_id, first_event_id FROM runs r WHERE trace_id IN (SELECT trace_id FROM touched_traces) "
        f"AND (r.first_event_id > {after} OR trace_id IN (SELECT trace_id FROM printed_runs))"
    )
    scope = "trace_id IN (SELECT trace_id FROM print_runs)"
    # An agent that ended before and whose memory a new generation end changed is printed again.
    regenerated = (
        f"type = 'agent:end' AND (trace_id, span_id) IN (SELECT (trace_id, parent_span_id) FROM events "
        f"WHERE event_id > {after} AND type = 'generation:end' AND {scope})"
    )
    rows = _rows(f"{scope} AND (event_id > {after} OR ({regenerated}))", scope)
    conn.execute(f"CREATE OR REPLACE TEMP TABLE new_prints AS {rows}")
    printed_before = f"{scope} AND trace_id IN (SELECT trace_id FROM printed_runs)"
    conn.execute(
        f"DELETE FROM call_prints WHERE {printed_before} "
        "AND (trace_id, call_id) IN (SELECT (trace_id, call_id) FROM new_prints)"
    )
    # Stored by run and bucket: a compare reads the rows of a few buckets of a run, found by zone maps.
    conn.execute(
        f"INSERT INTO call_prints SELECT trace_id, {BUCKET_OF}, call_id, {POS.format(run='p.first_event_id')}, "
        "event_id, idx, mem_ev, h_in, h_out, h_err, h_mem, served "
        "FROM new_prints JOIN print_runs p USING (trace_id) ORDER BY trace_id, 2"
    )
    touched = f"(trace_id, bucket) IN (SELECT DISTINCT (trace_id, {BUCKET_OF}) FROM new_prints)"
    conn.execute(f"DELETE FROM print_buckets WHERE {printed_before} AND {touched}")
    digest(conn, f"{scope} AND {touched}")
    conn.execute("INSERT INTO printed_runs SELECT trace_id FROM print_runs ANTI JOIN printed_runs USING (trace_id)")
    conn.execute("DROP TABLE print_runs; DROP TABLE new_prints")


def digest(conn: duckdb.DuckDBPyConnection, where: str) -> None:
    """Count and digest the buckets of the stored fingerprints `where` chooses, into `print_buckets`."""
    conn.execute(
        f"""
        INSERT INTO print_buckets
        SELECT trace_id, bucket, count(*), bit_xor(hash(call_id, h_in, h_out, h_err, h_mem)),
               count(*) FILTER (WHERE served = {CACHED}), count(*) FILTER (WHERE served = {LIVE})
        FROM call_prints WHERE {where}
        GROUP BY 1, 2 ORDER BY 1, 2
        """
    )
