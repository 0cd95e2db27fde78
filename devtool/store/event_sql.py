"""TraceEvent rows from JSON text, in SQL: the one projection every way events enter the store uses.

`insert_events_sql(relation)` takes the JSON text of each event (`body`, in load order), reads it with
`from_json` and an explicit structure (auto-detection fails when keys appear late in a file), checks it
with the event gate's rule in SQL (`event_gate.VALID_SQL`), and appends it to `events`. The first bad
event aborts the statement through DuckDB's `error()`: the caller rolls back and asks `scan.py` which lines are bad
and why, so the fast path never pays for diagnostics.

Event ids are `$base + n`: `n` numbers the relation's rows in load order (`WITH ORDINALITY` on the
reader, so the insert stays parallel; a window function would hold every row in memory, and numbering
afterwards with an UPDATE costs a rewrite at commit), and `$base` is the highest id stored, read under
the write lock, so ids only grow.
"""

from __future__ import annotations

import duckdb

from devtool.store import derive
from devtool.store.event_gate import FIELDS_SQL, TIMESTAMP_SQL, VALID_SQL

# The fields no rule checks, read as the type the UI wants, where a wrong kind of value becomes NULL.
_UNCHECKED = (
    '"agentId": "VARCHAR", "callId": "VARCHAR", "contentHash": "VARCHAR", "cache": "BOOLEAN", '
    '"success": "BOOLEAN", "error": "JSON", "step": "BIGINT", "generationId": "BIGINT", '
    '"toolNames": "VARCHAR[]", "name": "VARCHAR", "adapterId": "VARCHAR", "entrypoint": "VARCHAR", '
    '"usage": {"promptTokens": "BIGINT", "completionTokens": "BIGINT"}, "costs": {"micro_usd": "DOUBLE"}}'
)
# Fields that are checked are read as JSON (so a wrong kind of value is seen, not cast away).
STRUCTURE = (
    '{"type": "JSON", "timestamp": "JSON", "schemaVersion": "JSON", '
    '"trace": {"traceId": "JSON", "spanId": "JSON", "parentSpanId": "JSON"}, ' + _UNCHECKED
)
# A text the gate wrote from the event it checked: its checked fields read as the types it made sure of.
_WRITTEN_STRUCTURE = (
    '{"type": "VARCHAR", "timestamp": "DOUBLE", '
    '"trace": {"traceId": "VARCHAR", "spanId": "VARCHAR", "parentSpanId": "VARCHAR"}, ' + _UNCHECKED
)

INVALID_EVENT = "devtool: invalid TraceEvent"


# What a span is called on the timeline and in the frame tree, from the event that opens it.
_LABEL = """
    CASE
        WHEN t LIKE '%:end' THEN NULL
        WHEN t = 'agent:start' THEN coalesce(nullif(e.agentId, ''), 'agent')
        WHEN t = 'runWith:start' THEN coalesce(e.entrypoint, e.name, 'runWith')
        WHEN t = 'generation:start' THEN 'generation ' || coalesce(e.generationId, 0)
        WHEN t = 'turn:start' THEN coalesce(e.name, 'turn ' || coalesce(e.step, 0))
        WHEN t = 'promptAgent:start' THEN 'prompt'
        WHEN t = 'model:call:start' THEN coalesce(e.adapterId, 'model call')
        WHEN t = 'tools:execute:start' THEN coalesce(nullif(array_to_string(e.toolNames, ', '), ''), 'tools')
        WHEN t = 'custom:span:start' THEN coalesce(e.name, 'span')
        WHEN t = 'error' THEN left(coalesce(e.error->>'message', e.error::VARCHAR, 'error'), 200)
        ELSE coalesce(e.name, regexp_replace(t, ':start$', ''))
    END
"""

_ERROR = """
    CASE json_type(e.error)
        WHEN 'OBJECT' THEN coalesce(e.error->>'message', e.error->>'name', e.error::VARCHAR)
        WHEN 'VARCHAR' THEN e.error->>'$'
        WHEN 'NULL' THEN NULL
        ELSE e.error::VARCHAR
    END
"""


# An event's identity (`events.event_key`): a 64-bit hash of its JSON text as stored, compared within
# its trace. The same event arriving again (an exporter's retry of a batch, a file loaded again with
# more lines, a followed file read again) has the same text: the exporter sends the same body, a file
# the same line. Distinct events differ in text (timestamp, span id, the exporter's `_seq`).
EVENT_KEY_SQL = "hash(body::VARCHAR)"


# The stored events a live batch is checked against: an exporter's retry has the same timestamps, so
# only stored events of the batch's traces (`$traces`) between its first and last (`$lo`, `$hi`) are
# read (the `ts` column's min/max per row group skip the rest of a long run, stored in time order).
_STORED_IN_WINDOW = "SELECT event_key FROM events WHERE ts BETWEEN $lo AND $hi AND trace_id = ANY($traces)"


def insert_events_sql(relation: str, *, live: bool = False, written: bool = False) -> str:
    """INSERT … SELECT from `relation` (`body`, and `n` from 1 in load order); parameters `$base`, `$source`.

    Events already stored (same trace, same `event_key`) are left out. `live`: the events are a live
    batch of `CheckedEvent`s (`event_gate.py`), so only the rule's fields are checked again, not the
    text's limits (`event_gate.TEXT_SQL`, which the Python gate measured on these very texts); they
    are checked against the stored events of their traces and times only (`$traces`, `$lo`, `$hi`);
    and the statement returns the ids it stored. `written` (with `live`): every text was written by
    the gate from the event it checked (`CheckedEvent.written`), so no key is given twice and DuckDB
    reads the rule's fields as the gate did: they are read as the types the rule made sure of, not
    checked again (reading them as JSON and checking them was half the insert's CPU).
    """
    keyed = f"(SELECT body, n, {EVENT_KEY_SQL} AS k FROM {relation})"
    structure, ids, timestamp = STRUCTURE, "e.trace.{} ->> '$'", TIMESTAMP_SQL
    if live:
        # Left out before the texts are read: the join then carries only the texts, not what is read.
        rule, returning, stored = FIELDS_SQL, "RETURNING event_id", ""
        keyed = f"(SELECT r.* FROM {keyed} r ANTI JOIN ({_STORED_IN_WINDOW}) stored ON stored.event_key = r.k)"
        if written:
            structure, ids, timestamp, rule = _WRITTEN_STRUCTURE, "e.trace.{}", "e.timestamp", "true"
    else:
        rule, returning = VALID_SQL, ""
        stored = (
            "ANTI JOIN (SELECT trace_id, event_key FROM events) stored"
            " ON stored.event_key = fresh.k AND stored.trace_id = fresh.e.trace.traceId ->> '$'"
        )
    kind = "e.type" if written else "e.type ->> '$'"
    return f"""
    INSERT INTO events
    SELECT
        $base + n AS event_id,
        $source AS source_id,
        {ids.format("traceId")},
        {ids.format("spanId")},
        nullif({ids.format("parentSpanId")}, ''),
        t,
        CASE WHEN {rule} THEN {timestamp} ELSE error('{INVALID_EVENT}') END,
        e.agentId,
        e.callId,
        e.contentHash,
        e.cache,
        e.success,
        {_LABEL},
        {_ERROR},
        e.usage.promptTokens,
        e.usage.completionTokens,
        body,
        CASE WHEN t IN ('model:call:end', 'turn:end') THEN e.costs.micro_usd END,
        k
    FROM (
        SELECT e, body, n, {kind} AS t, k FROM (
            SELECT from_json(body, '{structure}') AS e, body, n, k FROM {keyed}
        )
    ) fresh
    {stored}
    {returning}
    """


def file_relation(fmt: str, max_object_size: int) -> str:
    """The events of the JSON file `$path`: the text of each (`body`) and its position (`n`)."""
    options = f"format='{fmt}', maximum_object_size={int(max_object_size)}"
    return f"(SELECT json AS body, ordinality AS n FROM read_json_objects($path, {options}) WITH ORDINALITY)"


def file_bodies(fmt: str, max_object_size: int) -> str:
    """The JSON text of each event of the file `$path` (`body`), read by one thread: the search index's
    read of a file, beside the load's insert (one thread too: its ids follow the file's order, see
    `insert_events_sql`), each on a core of the machine's two rather than both on the insert's."""
    options = f"format='{fmt}', maximum_object_size={int(max_object_size)}"
    return (
        f"(SELECT json AS body FROM read_json_objects($path, {options}) WITH ORDINALITY "
        f"WHERE length(json) < {LONG_BODY})"
    )


# Events this long (characters of JSON) are left to `search.index_source`, after the insert: read
# beside it, their words and the insert's copy of them together passed DuckDB's memory limit.
LONG_BODY = 1 << 20


def insert_events(
    conn: duckdb.DuckDBPyConnection,
    relation: str,
    source_id: int,
    params: dict[str, object],
    *,
    derive_spans: bool = True,
) -> tuple[int, int, tuple[str, ...]]:
    """Insert the events of `relation` (its parameters in `params`), then derive their spans (unless
    `derive_spans` is False: the caller sees to it).

    Returns (events stored, spans, trace ids); no spans nor traces when not derived. Events stored
    already are not stored again (`insert_events_sql`), so ids may skip the numbers of those: they
    still only grow. The caller holds the write lock, in a transaction.
    """
    base = last_event_id(conn)
    params = {**params, "base": base, "source": source_id}
    count = conn.execute(insert_events_sql(relation), params).fetchall()[0][0]
    if count == 0 or not derive_spans:
        return count, 0, ()
    derived, refreshed = derive.refresh(conn, base)
    return count, derived, refreshed


def last_event_id(conn: duckdb.DuckDBPyConnection) -> int:
    """The highest event id stored (0 for none): new events are numbered after it, under the write lock."""
    return int(conn.execute("SELECT coalesce(max(event_id), 0) FROM events").fetchall()[0][0])
