"""The search words as migration 7 found them in the events stored before it: its SQL, frozen.

Migration 7 made `search_terms` from every stored event with the words SQL of its release. A released
migration never changes, so that SQL is kept here as it was, whatever `search.terms_sql` (the words
a load or a live batch adds now) becomes: the two must find the same words, which
tests/test_store_search.py checks on a run that has text in every field the index reads.
"""

from __future__ import annotations

from typing import Final

_FIELDS = (
    '{"type": "VARCHAR", "agentId": "VARCHAR", "name": "VARCHAR", "callId": "VARCHAR", "toolNames": "VARCHAR[]", '
    '"trace": {"traceId": "VARCHAR"}, "message": "JSON", "messages": [{"content": "VARCHAR"}], "rawText": "VARCHAR", '
    '"props": "JSON", "result": "JSON", "memory": "JSON", "error": "JSON", "args": "JSON", "data": "JSON", '
    '"draft": "JSON", "toolResults": [{"input": "JSON", "output": "JSON", "toolName": "VARCHAR"}]}'
)
_SEPARATOR_RUN = r"[\x01-\x2f\x3a-\x40\x5b-\x60\x7b-\x7f]+"

# SELECT the distinct `(trace_id, term)` of every stored event.
TERMS: Final = f"""
    WITH parsed AS (SELECT from_json(body, '{_FIELDS}') AS e FROM (SELECT body FROM events)),
    texts AS (
        SELECT DISTINCT trace_id, text FROM (
            SELECT e.trace.traceId AS trace_id, unnest(CASE WHEN e.trace.traceId IS NOT NULL THEN list_concat(
                [e.type, e.agentId, e.name, e.callId, array_to_string(e.toolNames, ' '),
                 CASE json_type(e.message) WHEN 'VARCHAR' THEN e.message->>'$' ELSE e.message->>'content' END,
                 e.rawText, e.props::VARCHAR, e.result::VARCHAR, e.memory::VARCHAR, e.error::VARCHAR,
                 e.args::VARCHAR, e.data::VARCHAR, e.draft::VARCHAR],
                [m.content FOR m IN e.messages],
                [concat_ws(' ', r.toolName, r.input::VARCHAR, r.output::VARCHAR) FOR r IN e.toolResults]) END) AS text
            FROM parsed
        ) WHERE text <> ''
    ),
    pieces AS (
        SELECT DISTINCT trace_id, piece FROM (SELECT trace_id, unnest(string_split(text, ' ')) AS piece FROM texts)
    )
    SELECT DISTINCT trace_id, term FROM (
        SELECT trace_id, unnest(regexp_split_to_array(lower(piece), '{_SEPARATOR_RUN}')) AS term FROM pieces
    ) WHERE term <> '' AND length(term) <= 64
"""
