"""TraceEvent rows from JSON text, in SQL: the one projection every way events enter the store uses.

`insert_events_sql(relation)` takes the JSON text of each event (`body`, in load order), reads it with
`from_json` and an explicit structure (auto-detection fails when keys appear late in a file), checks it
with the event gate's rule in SQL (`event_gate.VALID_SQL`), and appends it to `events`. The first bad
event aborts the statement through DuckDB's `error()`: the caller rolls back and asks `scan.py` which lines are bad
and why, so the fast path never pays for diagnostics.

Event ids are `$base + n`: `n` numbers the relation's rows in load order (`WITH ORDINALITY` on the
reader: numbering afterwards with an UPDATE costs a rewrite at commit), and `$base` is the highest id
stored, read under the write lock, so ids only grow. DuckDB numbers a reader's objects on one thread,
so a file is read by several readers at once, each keeping the objects between two positions
(`file_relation`), and inserted without keeping the readers' order (`unordered`): each row carries
its id, and the table's row groups each hold a range of ids, which is what reads by id skip by.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import duckdb

from devtool.store import derive, list_param
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


# A load's events that were stored before it (`$base`: the highest id then), taken out after its insert.
# Only the stored events of the load's own traces are read: a hash table of every stored event's key, built
# while the insert read the file, ran a second ten-million-event load out of DuckDB's 1 GiB.
_DROP_STORED = """
DELETE FROM events USING (
    SELECT trace_id, event_key FROM events
    WHERE event_id <= $base AND trace_id IN (SELECT DISTINCT trace_id FROM events WHERE event_id > $base)
) stored
WHERE events.event_id > $base AND events.trace_id = stored.trace_id AND events.event_key = stored.event_key
"""
_SHARES_A_TRACE = (
    "SELECT count(*) FROM events WHERE event_id <= $base"
    " AND trace_id IN (SELECT DISTINCT trace_id FROM events WHERE event_id > $base)"
)

# The stored events a live batch is checked against: an exporter's retry has the same timestamps, so
# only stored events of the batch's traces (`$traces`, a `list_param`) between its first and last
# (`$lo`, `$hi`) are read (the `ts` column's min/max per row group skip the rest of a long run, stored
# in time order).
STORED_IN_WINDOW = (
    f"SELECT event_key FROM events WHERE ts BETWEEN $lo AND $hi AND trace_id = ANY({list_param.of('traces')})"
)


def insert_events_sql(
    relation: str,
    *,
    live: bool = False,
    written: bool = False,
    returning: str = "",
    fresh: bool = False,
    listed: bool = False,
) -> str:
    """INSERT … SELECT from `relation` (`body`, and `n` from 1 in load order); parameters `$base`, `$source`.

    Events already stored (same trace, same `event_key`) are left out: by this statement for a `live`
    batch, after it for a load (`drop_stored`). `live`: the events are a live batch of `CheckedEvent`s
    (`event_gate.py`), so only the rule's fields are checked again, not the text's limits
    (`event_gate.TEXT_SQL`, which the Python gate measured on these very texts); they are checked
    against the stored events of their traces and times only (`$traces`, `$lo`, `$hi`); and the
    statement returns the ids it stored. `written` (with `live`): every text was written by
    the gate from the event it checked (`CheckedEvent.written`), so no key is given twice and DuckDB
    reads the rule's fields as the gate did: they are read as the types the rule made sure of, not
    checked again (reading them as JSON and checking them was half the insert's CPU). `returning`
    (with `live`): what the statement returns instead of the ids, the id first. `fresh` (with `live`):
    no event of the batch's traces is stored (the caller made sure), so none is looked for, and
    `$traces`, `$lo`, `$hi` are not taken (the anti-join was two fifths of a lone trace's append).
    `listed` (with `live`): the keys of the stored events it is checked against are given instead
    (`$stored`, a `list_param` of them, read by the caller in the same transaction: `STORED_IN_WINDOW`),
    and looked up in that list: DuckDB built its hash table for the anti-join from the batch, texts and
    all, ~10 µs a span of an OTLP ingest where the window holds a few stored events or none.
    """
    keyed = f"(SELECT body, n, {EVENT_KEY_SQL} AS k FROM {relation})"
    structure, ids, timestamp = STRUCTURE, "e.trace.{} ->> '$'", TIMESTAMP_SQL
    if live:
        # Left out before the texts are read: the join then carries only the texts, not what is read.
        rule, returning = FIELDS_SQL, returning or "RETURNING event_id"
        if listed:
            keyed = f"(SELECT * FROM {keyed} WHERE NOT list_contains({list_param.of('stored', 'UBIGINT')}, k))"
        elif not fresh:
            keyed = f"(SELECT r.* FROM {keyed} r ANTI JOIN ({STORED_IN_WINDOW}) stored ON stored.event_key = r.k)"
        if written:
            structure, ids, timestamp, rule = _WRITTEN_STRUCTURE, "e.trace.{}", "e.timestamp", "true"
    else:
        rule, returning = VALID_SQL, ""
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
    {returning}
    """


def file_relation(fmt: str, max_object_size: int, cuts: Sequence[int] = ()) -> str:
    """The events of the JSON file `$path`: the text of each (`body`) and its position (`n`).

    With `cuts` (ascending positions), one reader more than there are cuts reads the file, each
    keeping the objects after one cut up to the next. A reader stops at its last object; the ones
    it skips it only counts, a small part of what inserting them costs.
    """
    options = f"format='{fmt}', maximum_object_size={int(max_object_size)}"
    bounds: list[int | None] = [0, *(int(cut) for cut in cuts), None]
    readers = []
    for low, high in itertools.pairwise(bounds):
        keep = [f"ordinality > {low}"] if low else []
        stop = ""
        if high is not None:
            keep.append(f"ordinality <= {high}")
            stop = f" LIMIT {high - (low or 0)}"  # the filter alone reads on to the end of the file
        where = f" WHERE {' AND '.join(keep)}" if keep else ""
        reader = f"read_json_objects($path, {options}) WITH ORDINALITY"
        readers.append(f"(SELECT json AS body, ordinality AS n FROM {reader}{where}{stop})")
    return "(" + " UNION ALL ".join(readers) + ")"


def insert_events(
    conn: duckdb.DuckDBPyConnection,
    relation: str,
    source_id: int,
    params: dict[str, object],
    *,
    derive_spans: bool = True,
    unordered: bool = False,
) -> tuple[int, int, tuple[str, ...]]:
    """Insert the events of `relation` (its parameters in `params`), then derive their spans (unless
    `derive_spans` is False: the caller sees to it). `unordered`: the rows may be stored in any order
    (a relation of several readers, `file_relation`, is then inserted on as many threads).

    Returns (events stored, spans, trace ids); no spans nor traces when not derived. Events stored
    already are not stored again (`drop_stored`), so ids may skip the numbers of those: they
    still only grow. The caller holds the write lock, in a transaction.
    """
    base = last_event_id(conn)
    params = {**params, "base": base, "source": source_id}
    if unordered:
        # A session setting of the writing connection, for this statement only (if it fails,
        # `Store.transaction` resets it after the rollback).
        conn.execute("SET preserve_insertion_order = false")
    count = conn.execute(insert_events_sql(relation), params).fetchall()[0][0]
    if unordered:
        conn.execute("RESET preserve_insertion_order")
    count -= drop_stored(conn, base)
    if count == 0 or not derive_spans:
        return count, 0, ()
    derived, refreshed = derive.refresh(conn, base)
    return count, derived, refreshed


def drop_stored(conn: duckdb.DuckDBPyConnection, base: int) -> int:
    """Delete the events above id `base` (a load's, in its transaction) that their trace held already
    (the same `event_key`); return how many. A load of new runs reads no stored key (the usual case:
    one count of the stored events of its traces, none)."""
    if conn.execute(_SHARES_A_TRACE, {"base": base}).fetchall()[0][0] == 0:
        return 0
    return int(conn.execute(_DROP_STORED, {"base": base}).fetchall()[0][0])


def last_event_id(conn: duckdb.DuckDBPyConnection) -> int:
    """The highest event id stored (0 for none): new events are numbered after it, under the write lock."""
    return int(conn.execute("SELECT coalesce(max(event_id), 0) FROM events").fetchall()[0][0])
