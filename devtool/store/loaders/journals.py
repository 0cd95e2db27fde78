"""Process journals: one JournalEntry a line, as `devtool.journal` and `promptise` write them.

An entry is stored once per `(process_id, entry_id)`: loading a journal again after it grew adds only
the entries that are new. An entry written without an id gets the one `devtool.journal` derives for it
(that of the published library), so it can be a rewind target here too. `ts_ms` is the timestamp as
milliseconds since the epoch (a timestamp without offset is UTC); `timestamp` keeps the text as written.
"""

from __future__ import annotations

from typing import BinaryIO

import duckdb
import orjson

from devtool.journal import JournalEntry, JournalError
from devtool.store.loaders.base import Inserted, Reading, Sample
from devtool.store.rules import ISO_TIMESTAMP, journal_entry_problem
from devtool.store.scan import Scan, scan_jsonl

INVALID_ENTRY = "devtool: invalid journal entry"

_COLUMNS = "{'entry_id': 'JSON', 'process_id': 'JSON', 'timestamp': 'JSON', 'entry_type': 'JSON', 'data': 'JSON'}"

_VALID = f"""
    json_type(e.process_id) = 'VARCHAR' AND (e.process_id->>'$') <> ''
    AND json_type(e.entry_type) = 'VARCHAR' AND (e.entry_type->>'$') <> ''
    AND coalesce(json_type(e.entry_id), 'NULL') IN ('NULL', 'VARCHAR')
    AND coalesce(json_type(body, '$.data'), 'OBJECT') = 'OBJECT'
    AND json_type(e.timestamp) = 'VARCHAR' AND regexp_full_match(e.timestamp->>'$', '{ISO_TIMESTAMP}')
    AND TRY_CAST(e.timestamp->>'$' AS TIMESTAMPTZ) IS NOT NULL
"""

_STAGE = f"""
    CREATE OR REPLACE TEMP TABLE staged_entries AS
    SELECT
        row_number() OVER () AS n,
        CASE WHEN {_VALID} THEN e.process_id->>'$' ELSE error('{INVALID_ENTRY}') END AS process_id,
        coalesce(e.entry_id->>'$', '') AS entry_id,
        e.entry_type->>'$' AS entry_type,
        e.timestamp->>'$' AS timestamp,
        coalesce(e.data, '{{}}') AS data,
        body
    FROM (
        SELECT e, body FROM
            (SELECT e FROM read_json($path, format='newline_delimited', maximum_object_size=$size,
                                     columns={_COLUMNS}) AS e)
            POSITIONAL JOIN
            (SELECT json AS body FROM read_json_objects($path, format='newline_delimited',
                                                        maximum_object_size=$size))
    )
"""

_INSERT = """
    INSERT INTO journal_entries
    SELECT
        $base + s.n, $source, s.process_id, s.entry_id, s.entry_type, s.timestamp,
        CASE WHEN regexp_matches(s.timestamp, '(Z|[+-]\\d{2}:?\\d{2})$')
             THEN epoch_us(s.timestamp::TIMESTAMPTZ) ELSE epoch_us(s.timestamp::TIMESTAMP) END / 1000.0,
        s.data,
        s.data->>'trace_id'
    FROM staged_entries s
    WHERE NOT EXISTS (
        SELECT 1 FROM journal_entries j WHERE j.process_id = s.process_id AND j.entry_id = s.entry_id
    )
    ORDER BY s.n
"""


class JournalJsonl:
    kind = "journal-jsonl"
    description = "process journal (JSONL)"

    def claims(self, sample: Sample) -> bool:
        obj = sample.first_object
        return sample.first_byte != b"[" and obj is not None and ("entry_type" in obj or "process_id" in obj)

    def insert(self, conn: duckdb.DuckDBPyConnection, path: str, source_id: int, reading: Reading) -> Inserted:
        conn.execute(_STAGE, {"path": path, "size": reading.max_object_size})
        unnamed = conn.execute("SELECT n, body FROM staged_entries WHERE entry_id = ''").fetchall()
        if unnamed:
            try:
                derived = [(n, JournalEntry.from_dict(orjson.loads(body)).entry_id) for n, body in unnamed]
            except JournalError as exc:  # read differently by SQL and the journal: let the scan name it
                raise duckdb.InvalidInputException(f"{INVALID_ENTRY}: {exc}") from exc
            conn.executemany("UPDATE staged_entries SET entry_id = ? WHERE n = ?", [(i, n) for n, i in derived])
        base = conn.execute("SELECT coalesce(max(entry_seq), 0) FROM journal_entries").fetchall()[0][0]
        added = conn.execute(_INSERT, {"base": base, "source": source_id}).fetchall()[0][0]
        processes = conn.execute("SELECT DISTINCT process_id FROM staged_entries ORDER BY 1").fetchall()
        conn.execute("DROP TABLE staged_entries")
        return Inserted(journal_entries=int(added), processes=tuple(row[0] for row in processes))

    def scan(self, source: BinaryIO, good: BinaryIO | None) -> Scan:
        return scan_jsonl(source, journal_entry_problem, good)
