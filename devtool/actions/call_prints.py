"""A run's calls as fingerprints: what two runs are compared on (`actions/compare.py`).

A call is a frame (the run's root, an agent), a model turn or a tool call, known by its callId (the
same agent call has the same callId in a replay or a fork of the run, since callIds count calls in
order within their parent). For each, hashes (DuckDB's 64-bit `hash`) of what went in (an agent's
props, a turn's or tool's contentHash), what came out (an agent's result, a turn's message, a tool's
output), its error, and a frame's memory (its last generation's; the root's from `runWith:end`),
with its place in the run (calls ordered by their end: a call ends before its parent, so the order
puts the innermost first) and where its values are (the end event, a tool's index in its batch, the
event holding the memory), so only the calls a page shows have their bodies read again.

Reading them decompresses a run's end events (about 0.4 s a side at a million events), so they
are kept, in compact arrays sorted by callId, for the few runs compared last, while the run has not
grown (its event count and last event id are the key).
"""

from __future__ import annotations

import threading
from array import array
from collections import OrderedDict
from dataclasses import dataclass

from devtool.store import NotFoundError, Store

KEPT_RUNS = 4
FRAME, LIVE, CACHED = 0, 1, 2  # `served` per call: a frame, a call that ran, a call served from the journal

_CALLS_SQL = """
WITH gens AS (
    SELECT parent_span_id AS span, max(event_id) AS mem_ev, arg_max(hash(body->'$.memory'), event_id) AS h_mem
    FROM events WHERE trace_id = $trace AND type = 'generation:end' GROUP BY 1
),
frames AS (
    SELECT CASE WHEN type = 'runWith:end' THEN 'root' ELSE call_id END AS call_id, event_id, type, span_id,
           content_hash, cache, json_extract(body, ['$.props', '$.result', '$.error', '$.message', '$.memory']) AS x
    FROM events WHERE trace_id = $trace AND type IN ('runWith:end', 'agent:end', 'turn:end')
),
calls AS (
    SELECT f.call_id, f.event_id, -1 AS idx,
           CASE WHEN f.type = 'turn:end' THEN hash(f.content_hash) ELSE hash(x[1]) END AS h_in,
           hash(CASE WHEN f.type = 'turn:end' THEN x[4] ELSE x[2] END) AS h_out,
           hash(x[3]) AS h_err,
           CASE WHEN f.type = 'runWith:end' THEN hash(x[5]) ELSE g.h_mem END AS h_mem,
           CASE WHEN f.type = 'runWith:end' THEN f.event_id ELSE g.mem_ev END AS mem_ev,
           CASE WHEN f.type <> 'turn:end' THEN 0 WHEN f.cache THEN 2 ELSE 1 END AS served
    FROM frames f LEFT JOIN gens g ON g.span = f.span_id AND f.type = 'agent:end'
    UNION ALL
    SELECT coalesce(r->>'callPath', r->>'callId'), event_id, i - 1,
           hash(r->>'toolName', r->'input'), hash(r->'output'), hash(r->'error'), NULL, NULL,
           CASE WHEN r->>'cache' = 'true' THEN 2 ELSE 1 END
    FROM (SELECT event_id, unnest(t) AS r, generate_subscripts(t, 1) AS i
          FROM (SELECT event_id, CAST(json_extract(body, '$.toolResults') AS JSON[]) AS t
                FROM events WHERE trace_id = $trace AND type = 'tools:execute:end'))
)
SELECT call_id, row_number() OVER (ORDER BY event_id, idx) AS pos, event_id, idx, coalesce(mem_ev, -1),
       h_in, h_out, h_err, coalesce(h_mem, 0), served
FROM calls WHERE call_id IS NOT NULL
ORDER BY call_id
"""


@dataclass(frozen=True)
class CallPrints:
    """One run's calls, sorted by callId, as parallel arrays (the i-th entry of each is one call)."""

    trace_id: str
    call_ids: list[str]
    pos: array[int]  # its place in the run, by end (innermost first)
    event: array[int]  # the event holding its values (a frame's or turn's end, a tool's batch end)
    index: array[int]  # a tool's index in its batch's toolResults (-1: not a tool)
    memory_event: array[int]  # the event holding a frame's memory (-1: none)
    inputs: array[int]
    outputs: array[int]
    errors: array[int]
    memories: array[int]
    served: bytes  # FRAME, LIVE or CACHED

    def __len__(self) -> int:
        return len(self.call_ids)


_kept: OrderedDict[tuple[str, str, int, int], CallPrints] = OrderedDict()
_lock = threading.Lock()


def call_prints(store: Store, trace_id: str) -> CallPrints:
    """Run `trace_id`'s calls (kept for the runs compared last); `NotFoundError` when there is no such run."""
    rows = store.query("SELECT events, last_event_id FROM runs WHERE trace_id = ?", [trace_id])
    if not rows:
        raise NotFoundError(f"no run {trace_id!r} in the store")
    key = (str(store.path), trace_id, int(rows[0][0]), int(rows[0][1] or -1))
    with _lock:
        if key in _kept:
            _kept.move_to_end(key)
            return _kept[key]
    prints = _read(store, trace_id)
    with _lock:
        _kept[key] = prints
        while len(_kept) > KEPT_RUNS:
            _kept.popitem(last=False)
    return prints


def _read(store: Store, trace_id: str) -> CallPrints:
    rows = store.query(_CALLS_SQL, {"trace": trace_id})
    columns = list(zip(*rows, strict=True)) if rows else [()] * 10
    return CallPrints(
        trace_id,
        list(columns[0]),
        array("q", columns[1]),
        array("q", columns[2]),
        array("q", columns[3]),
        array("q", columns[4]),
        array("Q", columns[5]),
        array("Q", columns[6]),
        array("Q", columns[7]),
        array("Q", columns[8]),
        bytes(columns[9]),
    )
