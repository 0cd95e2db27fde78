"""The search index: the words of each run, made while it loads, and the runs a query's words are in.

A run's *text* is what its agents were given and said, and what its spans are called: every
message's content, the model's raw text, agents' props, results and memory, tools' names, inputs and
outputs, errors, log lines and their arguments, a custom span's data, and the types, names, agent ids
and callIds of its events. (Other fields an event may carry are not searched: ids, hashes,
timestamps, counts, token usage, tool schemas, and the model's tool calls, whose names, inputs and
outputs are their tools'.)
Its *words* are that text lowercased and cut at every ASCII character that is not a letter or a
digit (letters and digits of other scripts stay in words), of at most `LONGEST` characters; the
index keeps each run's words once (`search_terms`), however many events repeat them (a conversation
is resent whole at every turn: texts are told apart before they are cut into words).

A query matches a run when each of its words is part of one of the run's words (`refund pol` finds
a run that says "refund" and "policy" anywhere; `fund` finds "refund"). That is the scan of every
event's JSON it replaces, less: a query's words need not stand next to each other, and punctuation
is not searched for (`worker:42` asks for "worker" and "42"). The run's id, name and agent ids are
still matched as the whole query, as before.

A file's words are read from the events its load stored, in the load's transaction, a million events
at a time (`index_source`): a second read of the file beside the insert costs more (the file's JSON
is validated as it is read, the store's is not) and, now that the insert reads the file on every
core, finds none idle. Live batches are indexed with their spans (`index_events`).

Beside each run's words, the index keeps the *blocks* of the run's events each word is in
(`search_blocks`: a block is `BLOCK` events by id, `event_id >> BLOCK_BITS`), found by the same
statement: the distinct words are told apart by block as well (a conversation resent at every turn
is resent within a few blocks), which costs the words' statement little (9.9 s for 9.5 s at 1M
events; 162,000 rows for 46,800 words). A find inside a run (`queries.find`) reads only the events
of the blocks that hold each of its words: a text a few events late in a run hold is the read of a
block or two, not of every event before it. Events stored before migration 12 have no blocks
(`search_blocks_since` is the first id that has).
"""

from __future__ import annotations

import re
from typing import Final

import duckdb

from devtool.store import list_param
from devtool.store.event_chunks import event_chunks

LONGEST: Final = 64
# A load's events are indexed this many at a time. One statement over a whole file holds all its
# texts and pieces in its DISTINCTs at once: at 10M events it was a third of the load (38-40 s of
# 120-122 s), ten of them 18-29 s.
CHUNK: Final = 1_000_000
# Events of a block of `search_blocks`: a find reads a block's events in 4-20 ms (its first vector of
# bodies costs most); smaller blocks almost double the rows (288,000 at 1M events for 1,024).
BLOCK_BITS: Final = 12
BLOCK: Final = 1 << BLOCK_BITS
# Each word of a query is a scan of every run's words (`queries.runs`): the words past these are dropped.
MAX_QUERY_WORDS: Final = 16

_SEPARATORS = "".join(chr(code) for code in range(1, 128) if not chr(code).isalnum())
_WORD_BREAK = re.compile(f"[{re.escape(_SEPARATORS)}]+")


def _separator_run() -> str:
    """A run of separators as an RE2 pattern for DuckDB: the separators' code points as ranges."""
    codes = [ord(char) for char in _SEPARATORS]
    starts = [code for code in codes if code - 1 not in codes]
    ends = [code for code in codes if code + 1 not in codes]
    return "[" + "".join(f"\\x{start:02x}-\\x{end:02x}" for start, end in zip(starts, ends, strict=True)) + "]+"


_SEPARATOR_RUN = _separator_run()

# The fields of an event its text is taken from (`message` is a log line's text, or a turn's answer);
# its type, agent id and callId are the stored event's columns.
_TEXT_FIELDS = (
    '{"name": "VARCHAR", "toolNames": "VARCHAR[]", "message": "JSON", "messages": [{"content": "VARCHAR"}], '
    '"rawText": "VARCHAR", "props": "JSON", "result": "JSON", "memory": "JSON", "error": "JSON", "args": "JSON", '
    '"data": "JSON", "draft": "JSON", "toolResults": [{"input": "JSON", "output": "JSON", "toolName": "VARCHAR"}]}'
)


def terms_sql(relation: str) -> str:
    """SELECT the distinct `(trace_id, block, term)` of the stored events of `relation` (their columns
    `event_id`, `trace_id`, `type`, `agent_id`, `call_id` and their JSON text `body`): each word of a
    run and the block of its events (`BLOCK_BITS`) it is in.

    Each event's JSON is parsed once, for the fields no column holds; the columns' few distinct
    values are told apart on their own, not among the texts (they were a third of the texts and,
    parsed, a fifth of the index's CPU). Texts are cut at spaces first: most of what lies between
    two spaces recurs across a run's texts, so only the distinct pieces are lowercased and cut at the
    other separators.
    """
    return f"""
    WITH parsed AS (
        SELECT trace_id, event_id >> {BLOCK_BITS} AS block, from_json(body, '{_TEXT_FIELDS}') AS e FROM {relation}
    ),
    texts AS (
        SELECT DISTINCT trace_id, block, text FROM (
            SELECT trace_id, block, unnest(list_concat(
                [e.name, array_to_string(e.toolNames, ' '),
                 CASE json_type(e.message) WHEN 'VARCHAR' THEN e.message->>'$' ELSE e.message->>'content' END,
                 e.rawText, e.props::VARCHAR, e.result::VARCHAR, e.memory::VARCHAR, e.error::VARCHAR,
                 e.args::VARCHAR, e.data::VARCHAR, e.draft::VARCHAR],
                [m.content FOR m IN e.messages],
                [concat_ws(' ', r.toolName, r.input::VARCHAR, r.output::VARCHAR) FOR r IN e.toolResults])) AS text
            FROM parsed
        ) WHERE text <> ''
        UNION ALL SELECT DISTINCT trace_id, event_id >> {BLOCK_BITS}, type FROM {relation} WHERE type <> ''
        UNION ALL SELECT DISTINCT trace_id, event_id >> {BLOCK_BITS}, agent_id FROM {relation} WHERE agent_id <> ''
        UNION ALL SELECT DISTINCT trace_id, event_id >> {BLOCK_BITS}, call_id FROM {relation} WHERE call_id <> ''
    ),
    pieces AS (
        SELECT DISTINCT trace_id, block, piece FROM (
            SELECT trace_id, block, unnest(string_split(text, ' ')) AS piece FROM texts
        )
    )
    SELECT DISTINCT trace_id, block, term FROM (
        SELECT trace_id, block, unnest(regexp_split_to_array(lower(piece), '{_SEPARATOR_RUN}')) AS term FROM pieces
    ) WHERE term <> '' AND length(term) <= {LONGEST}
    """


# What `terms_sql` reads of the events it indexes.
_COLUMNS = "event_id, trace_id, type, agent_id, call_id, body"

# New words and blocks only: a run loaded in parts, or live, has many of its words already, and a
# live batch's first block may hold earlier batches' events. `{blocks}`: the blocks the new words may
# already be in (a condition on `b`), so that the check reads those blocks' rows only.
_ADD = (
    "CREATE OR REPLACE TEMP TABLE new_words AS {terms}",
    """
    INSERT INTO search_terms
    SELECT DISTINCT trace_id, term FROM new_words new
    WHERE NOT EXISTS (SELECT 1 FROM search_terms t WHERE t.trace_id = new.trace_id AND t.term = new.term)
    """,
    """
    INSERT INTO search_blocks
    SELECT trace_id, block, term FROM new_words new
    WHERE NOT EXISTS (
        SELECT 1 FROM search_blocks b
        WHERE {blocks} AND b.trace_id = new.trace_id AND b.block = new.block AND b.term = new.term
    )
    """,
    "DROP TABLE new_words",
)


def _add(conn: duckdb.DuckDBPyConnection, relation: str, blocks: str, params: dict[str, object] | None = None) -> None:
    """Add the words and blocks of `relation`'s events that the index has not (`_ADD`)."""
    conn.execute(_ADD[0].format(terms=terms_sql(relation)), params)
    for statement in _ADD[1:]:
        conn.execute(statement.format(blocks=blocks))


def words(query: str) -> list[str]:
    """The words of a query, as the index cuts text into words (lowercase, no punctuation); the first
    `MAX_QUERY_WORDS` of them."""
    return [word for word in _WORD_BREAK.split(query.lower()) if word][:MAX_QUERY_WORDS]


def index_source(conn: duckdb.DuckDBPyConnection, source_id: int, *, chunk: int = CHUNK) -> int:
    """Add the words of the events a load stored from source `source_id`, in the load's transaction,
    `chunk` events at a time (`event_chunks`: a source's ids are one range, which the load's write
    lock keeps to it, with gaps). Returns the number of chunks."""
    first, last = conn.execute(
        "SELECT min(event_id), max(event_id) FROM events WHERE source_id = ?", [source_id]
    ).fetchall()[0]
    if first is None:
        return 0
    chunks = 0
    for low, high in event_chunks(conn, int(first), int(last), chunk):
        relation = (
            f"(SELECT {_COLUMNS} FROM events WHERE source_id = {int(source_id)} AND event_id BETWEEN {low} AND {high})"
        )
        blocks = f"b.block BETWEEN {low >> BLOCK_BITS} AND {high >> BLOCK_BITS}"
        _add(conn, relation, blocks)
        chunks += 1
    return chunks


def index_events(conn: duckdb.DuckDBPyConnection, after_event_id: int, traces: tuple[str, ...]) -> None:
    """Add the words of the events of `traces` after `after_event_id` (a live batch), in the caller's
    transaction."""
    batch = f"event_id > {int(after_event_id)} AND trace_id IN (SELECT unnest({list_param.of('traces')}))"
    relation = f"(SELECT {_COLUMNS} FROM events WHERE {batch})"
    blocks = f"b.block >= {(int(after_event_id) + 1) >> BLOCK_BITS}"
    _add(conn, relation, blocks, {"traces": list_param.texts(traces)})
