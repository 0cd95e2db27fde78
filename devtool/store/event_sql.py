"""TraceEvent rows from JSON text, in SQL: the one projection every way events enter the store uses.

`insert_events_sql(relation)` reads `relation` (one JSON text `body` per event, in load order) with
`from_json` and an explicit structure (auto-detection fails when keys appear late in a file, and an
explicit structure is one parse per event), checks each event against the rules `rules.py` states in
Python, and inserts the good ones into `events`. The first bad event aborts the statement through
DuckDB's `error()`: the caller rolls back and asks `scan.py` which lines are bad and why, so the fast
path never pays for diagnostics.

Event ids are `base + n`, n the 1-based position in the relation; the caller passes `base`, the
highest id so far, and holds the write lock, so ids only grow.
"""

from __future__ import annotations

import duckdb

from devtool.store import spans

# Fields that are checked are read as JSON (so a wrong kind of value is seen, not cast away);
# the others as the type the UI wants, where a wrong kind of value becomes NULL.
STRUCTURE = (
    '{"type": "VARCHAR", "timestamp": "JSON", "schemaVersion": "JSON", '
    '"trace": {"traceId": "VARCHAR", "spanId": "VARCHAR", "parentSpanId": "VARCHAR"}, '
    '"agentId": "VARCHAR", "callId": "VARCHAR", "contentHash": "VARCHAR", "cache": "BOOLEAN", '
    '"success": "BOOLEAN", "error": "JSON", "step": "BIGINT", "generationId": "BIGINT", '
    '"toolNames": "VARCHAR[]", "name": "VARCHAR", "adapterId": "VARCHAR", "entrypoint": "VARCHAR", '
    '"message": "JSON", "usage": {"promptTokens": "BIGINT", "completionTokens": "BIGINT"}}'
)

INVALID_EVENT = "devtool: invalid TraceEvent"

_VALID = """
    t <> '' AND e.trace.traceId <> '' AND e.trace.spanId <> ''
    AND json_type(e.timestamp) IN ('UBIGINT', 'BIGINT', 'DOUBLE') AND isfinite(e.timestamp::DOUBLE)
    AND json_type(e.schemaVersion) IN ('UBIGINT', 'BIGINT', 'DOUBLE') AND e.schemaVersion::DOUBLE = 1
"""

# What a span is called on the timeline and in the frame tree, from the event that opens it.
_LABEL = """
    CASE
        WHEN t LIKE '%:end' THEN NULL
        WHEN t = 'agent:start' THEN coalesce(nullif(e.agentId, ''), 'agent')
        WHEN t = 'runWith:start' THEN coalesce(e.entrypoint, 'runWith')
        WHEN t = 'generation:start' THEN 'generation ' || coalesce(e.generationId, 0)
        WHEN t = 'turn:start' THEN 'turn ' || coalesce(e.step, 0)
        WHEN t = 'promptAgent:start' THEN 'prompt'
        WHEN t = 'model:call:start' THEN coalesce(e.adapterId, 'model call')
        WHEN t = 'tools:execute:start' THEN coalesce(nullif(array_to_string(e.toolNames, ', '), ''), 'tools')
        WHEN t = 'custom:span:start' THEN coalesce(e.name, 'span')
        WHEN json_type(e.message) = 'VARCHAR' THEN left(e.message->>'$', 200)
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


COLUMNS = (
    "{'type': 'VARCHAR', 'timestamp': 'JSON', 'schemaVersion': 'JSON', "
    "'trace': 'STRUCT(traceId VARCHAR, spanId VARCHAR, parentSpanId VARCHAR)', "
    "'agentId': 'VARCHAR', 'callId': 'VARCHAR', 'contentHash': 'VARCHAR', 'cache': 'BOOLEAN', "
    "'success': 'BOOLEAN', 'error': 'JSON', 'step': 'BIGINT', 'generationId': 'BIGINT', "
    "'toolNames': 'VARCHAR[]', 'name': 'VARCHAR', 'adapterId': 'VARCHAR', 'entrypoint': 'VARCHAR', "
    "'message': 'JSON', 'usage': 'STRUCT(promptTokens BIGINT, completionTokens BIGINT)'}"
)


def insert_events_sql(relation: str) -> str:
    """INSERT … SELECT from `relation` (columns `e` and `body`); parameters: base event id, source id."""
    return f"""
    INSERT INTO events
    SELECT
        $base + row_number() OVER () AS event_id,
        $source AS source_id,
        e.trace.traceId,
        e.trace.spanId,
        nullif(e.trace.parentSpanId, ''),
        t,
        CASE WHEN {_VALID} THEN e.timestamp::DOUBLE ELSE error('{INVALID_EVENT}') END,
        e.agentId,
        e.callId,
        e.contentHash,
        e.cache,
        e.success,
        {_LABEL},
        {_ERROR},
        e.usage.promptTokens,
        e.usage.completionTokens,
        body
    FROM (SELECT e, body, e.type AS t FROM {relation})
    """


def file_relation(fmt: str, max_object_size: int) -> str:
    """Events of the JSON file `$path` in order: the typed columns and the raw text of each, side by side.

    DuckDB's reader parses the columns it is given as it reads (far cheaper than `from_json` after);
    a second reader keeps each event's text. Both read the file in order, so POSITIONAL JOIN pairs them.
    """
    options = f"format='{fmt}', maximum_object_size={int(max_object_size)}"
    return f"""(
        SELECT e, body FROM
            (SELECT e FROM read_json($path, {options}, columns={COLUMNS}) AS e)
            POSITIONAL JOIN
            (SELECT json AS body FROM read_json_objects($path, {options}))
    )"""


def insert_events(
    conn: duckdb.DuckDBPyConnection, relation: str, source_id: int, params: dict[str, object]
) -> tuple[int, int, tuple[str, ...]]:
    """Insert the events of `relation` (its parameters in `params`), then derive their spans.

    Returns (events, spans, trace ids). The caller holds the write lock, in a transaction.
    """
    base = conn.execute("SELECT coalesce(max(event_id), 0) FROM events").fetchall()[0][0]
    count = conn.execute(insert_events_sql(relation), {**params, "base": base, "source": source_id}).fetchall()[0][0]
    if count == 0:
        return 0, 0, ()
    derived, traces = spans.refresh(conn, base)
    return count, derived, traces
