"""The store's tables, as a list of migrations: `MIGRATIONS[n - 1]` takes the schema to version n.

Never edit a released migration; append a new one. Migration 1 is the first release (its SQL in
`schema_tables_1.py`, as migration 7's words are in `schema_words_7.py`).

- `sources`: each loaded file or live stream, once per content hash (a file loaded twice adds nothing).
- `events`: one row per TraceEvent. `event_id` is its position in the store: it only grows, in load
  order, so it orders equal timestamps and is the SSE `Last-Event-ID` of live streams. The fields the
  UI filters on are columns; the event itself, exactly as loaded, is `body`, compressed with zstd
  (for JSON events, 6x smaller than DuckDB's default string compression and 3x faster to write).
- `spans`: derived from events in SQL (see `spans.py`): a `*:start`/`*:end` pair is one span, a start
  without its end is `running`; a point event (`budget:update`, `sys:log`, ...) with a span id of its
  own is an `instant` span. `depth` is the nesting for timeline rows, `frame_parent_id` the nearest
  ancestor the frame tree shows.
- `runs`: one summary row per trace, kept up to date by every load and append; since migration 7
  with its prompt and tool calls counted, the source of its first event and its deepest span.
- `journal_entries`: process-journal entries, with `ts_ms` parsed from their ISO 8601 `timestamp`.
- `snapshots`, `snapshot_nodes` (migrations 2, 3 and 8) and the frame indexes of big runs,
  `rewind_runs`, `rewind_frames` (migration 3) and `rewind_chunks` (migration 7), were kept here until
  migration 11 moved them into the store's rewind file, where `schema_rewind.py` says what they hold.
- Since migration 4, `events.cost_micro_usd` is a `model:call:end`'s `costs.micro_usd` (NULL when its
  price is unknown), and a run's `cost_micro_usd` sums its priced calls (NULL when none is priced)
  and `unpriced_calls` counts its successful calls without a price: its total is unknown, not $0.
- Migration 5 counts a run's `spans`, `failed` and `running` over the spans its page shows (not
  instants, prompt loops or model calls), as `derive` does from then on.
- Since migration 6, `events.event_key` is the event's identity within its trace (`event_sql.
  EVENT_KEY_SQL`): an event whose trace holds one with the same key is not stored again.
- `search_terms` (migration 7): the search index, each run's words once (`search.py`); the words of
  the events stored before are found by the migration (its SQL frozen in `schema_words_7.py`).
- `span_keys`, `frame_keys`, `span_text`, `span_tiles`, `keyed_runs` (migration 7): a big run's
  spans' keys, sorted to find a span by its id and a parent's children in a range, the text its
  span search reads, and its spans grouped in tiles of time for the timeline seen wide
  (`span_keys.py`). Migration 7 also gives runs their `prompts`, `tools`, `depth` and first
  `source_id`, counted from what was stored.
- Migration 8 stores `snapshot_nodes.body` uncompressed and gives the frame index each sealed frame's
  and chunk's `aggregate` (indexes made before are dropped).
- Migration 9 gives runs the key of the span that names them (`name_key`, `name_span`: see
  `run_summary.py`), so an append updates a run's summary from what it changed; a run stored before
  has none until its next append, which counts it whole once.
- Migration 10 adds `agent_generations`, `span_labels`, `span_grams` and `span_tiles_fine` to a keyed
  run's span keys: its generations that ended, under a hash of their agent's callId (indexed), the
  names and kinds of its spans, the short pieces of its searched text, and its timeline's tiles four
  times finer (`span_keys.py`, `span_search.py`), made for the runs keyed before from their spans;
  and an index on `frame_keys`' key, through which a page of parents has their children looked up.
- Migration 11 drops the snapshots and the frame indexes, which the rewind file took (its migration
  1 copied the snapshots and their nodes first), and keeps the rewind file's id in `rewind_file`: see
  `rewind_file.py` for why they have a file of their own.
- `search_blocks` (migration 12): each run's words by the block of events they are in (`search.py`),
  what a find inside a run reads first; `search_blocks_since` is the first event id a load or an
  append indexed so (the events stored before have no blocks: a find reads them as it did).
  Migration 12 also adds `span_failures` to a keyed run's span keys, its failed spans
  (`span_failures.py`), made for the runs keyed before from their spans.
- Migration 13 adds `call_prints`, `print_buckets` and `printed_runs`, each run's calls as
  fingerprints, what a compare joins (`call_prints.py`); a run stored before is not printed (a
  compare reads its events). Migration 14 places each call by where its end is in its run
  (`call_prints.POS`), not by a count of the run's calls.
- `unindexed` (migration 15): the live runs whose search words and call fingerprints of the events
  after `after_event_id` are not made yet: written by the derive that makes them visible, deleted by
  the index step that follows it (`Store.index_backlog`), read again when the store opens.
"""

from __future__ import annotations

from devtool.store import schema_tables_1, schema_words_7

# The first migration that needs the rewind file attached (`rewind_file.attach`, which copies what
# the main file held until then).
REWIND_FILE_AT = 11
# The migration that adds `unindexed` (what a store older than it cannot have left to index).
UNINDEXED_AT = 15

MIGRATIONS: list[str] = [
    schema_tables_1.TABLES,
    """
    ALTER TABLE snapshots ADD COLUMN created_by VARCHAR;
    """,
    """
    ALTER TABLE snapshots ADD COLUMN root_id VARCHAR;
    CREATE TABLE snapshot_nodes (
        node_id VARCHAR PRIMARY KEY,
        body JSON NOT NULL USING COMPRESSION zstd,
        frames BIGINT NOT NULL,
        prompts BIGINT NOT NULL,
        tools BIGINT NOT NULL,
        tombstones BIGINT NOT NULL
    );
    CREATE TABLE rewind_runs (
        trace_id VARCHAR PRIMARY KEY,
        last_event_id BIGINT NOT NULL,
        indexed BOOLEAN NOT NULL,
        reason VARCHAR,
        events BIGINT NOT NULL,
        frames BIGINT NOT NULL,
        seconds DOUBLE NOT NULL,
        built_at TIMESTAMPTZ NOT NULL DEFAULT now()
    );
    CREATE TABLE rewind_frames (
        trace_id VARCHAR NOT NULL,
        frame INTEGER NOT NULL,
        parent INTEGER NOT NULL,
        call_id VARCHAR NOT NULL,
        created BIGINT NOT NULL,
        last BIGINT NOT NULL,
        node_id VARCHAR NOT NULL,
        status VARCHAR NOT NULL,
        error JSON,
        events BIGINT[] NOT NULL
    );
    """,
    """
    ALTER TABLE events ADD COLUMN cost_micro_usd DOUBLE;
    UPDATE events SET cost_micro_usd = TRY_CAST(body->'costs'->>'micro_usd' AS DOUBLE) WHERE type = 'model:call:end';
    ALTER TABLE runs ADD COLUMN cost_micro_usd DOUBLE;
    ALTER TABLE runs ADD COLUMN unpriced_calls BIGINT DEFAULT 0;
    UPDATE runs SET cost_micro_usd = c.cost, unpriced_calls = c.unpriced
    FROM (
        SELECT trace_id, sum(cost_micro_usd) AS cost,
               count(*) FILTER (WHERE cost_micro_usd IS NULL AND success) AS unpriced
        FROM events WHERE type = 'model:call:end' GROUP BY trace_id
    ) c
    WHERE runs.trace_id = c.trace_id;
    """,
    """
    UPDATE runs SET spans = counted.spans, failed = counted.failed, running = counted.running
    FROM (
        SELECT trace_id,
               count(*) FILTER (WHERE shown) AS spans,
               count(*) FILTER (WHERE shown AND status = 'failed') AS failed,
               count(*) FILTER (WHERE shown AND status = 'running') AS running
        FROM (SELECT trace_id, status, NOT instant AND kind NOT IN ('promptAgent', 'model:call') AS shown FROM spans)
        GROUP BY trace_id
    ) counted
    WHERE runs.trace_id = counted.trace_id;
    """,
    """
    ALTER TABLE events ADD COLUMN event_key UBIGINT;
    UPDATE events SET event_key = hash(body::VARCHAR);
    """,
    """
    DROP TABLE rewind_frames;
    DROP TABLE rewind_runs;
    CREATE SEQUENCE rewind_builds START 1;
    CREATE TABLE rewind_runs (
        trace_id VARCHAR PRIMARY KEY,
        build BIGINT NOT NULL,
        last_event_id BIGINT NOT NULL,
        indexed BOOLEAN NOT NULL,
        reason VARCHAR,
        events BIGINT NOT NULL,
        frames BIGINT NOT NULL,
        seconds DOUBLE NOT NULL,
        built_at TIMESTAMPTZ NOT NULL DEFAULT now()
    );
    CREATE TABLE rewind_frames (
        trace_id VARCHAR NOT NULL,
        build BIGINT NOT NULL,
        frame INTEGER NOT NULL,
        parent INTEGER NOT NULL,
        position INTEGER NOT NULL,
        call_id VARCHAR NOT NULL,
        created BIGINT NOT NULL,
        last BIGINT NOT NULL,
        node_id VARCHAR NOT NULL,
        status VARCHAR NOT NULL,
        error JSON,
        events BIGINT[] NOT NULL
    );
    CREATE TABLE rewind_chunks (
        trace_id VARCHAR NOT NULL,
        build BIGINT NOT NULL,
        frame INTEGER NOT NULL,
        level INTEGER NOT NULL,
        position INTEGER NOT NULL,
        last BIGINT NOT NULL,
        running BOOLEAN NOT NULL,
        node_id VARCHAR NOT NULL
    );
    CREATE TABLE search_terms (trace_id VARCHAR NOT NULL, term VARCHAR NOT NULL);
    CREATE SEQUENCE keyed_run_ids START 1;
    CREATE TABLE span_keys (
        key UBIGINT NOT NULL,
        run INTEGER NOT NULL,
        span_id VARCHAR NOT NULL,
        start_ts DOUBLE NOT NULL,
        start_event_id BIGINT,
        frame_parent_id VARCHAR,
        shown BOOLEAN NOT NULL
    );
    CREATE TABLE frame_keys (
        key UBIGINT NOT NULL,
        run INTEGER NOT NULL,
        frame_parent_id VARCHAR,
        start_ts DOUBLE NOT NULL,
        start_event_id BIGINT,
        span_id VARCHAR NOT NULL
    );
    CREATE TABLE span_text (
        run INTEGER NOT NULL, start_ts DOUBLE NOT NULL, start_event_id BIGINT, span_id VARCHAR NOT NULL, text VARCHAR,
        name VARCHAR, kind VARCHAR NOT NULL
    );
    CREATE TABLE keyed_runs (
        trace_id VARCHAR NOT NULL, run INTEGER NOT NULL, tile_origin DOUBLE NOT NULL, tile_ms DOUBLE NOT NULL,
        last_event_id BIGINT NOT NULL
    );
    CREATE TABLE span_tiles (
        trace_id VARCHAR NOT NULL,
        depth INTEGER NOT NULL,
        start_tile BIGINT NOT NULL,
        end_tile BIGINT NOT NULL,
        first DOUBLE NOT NULL,
        last DOUBLE NOT NULL,
        n BIGINT NOT NULL,
        span_id VARCHAR NOT NULL,
        kind VARCHAR NOT NULL,
        name VARCHAR,
        failed BIGINT NOT NULL,
        running BIGINT NOT NULL,
        cached BIGINT NOT NULL,
        frame_parent_id VARCHAR,
        one_name BOOLEAN NOT NULL
    );
    ALTER TABLE runs ADD COLUMN prompts BIGINT DEFAULT 0;
    ALTER TABLE runs ADD COLUMN tools BIGINT DEFAULT 0;
    ALTER TABLE runs ADD COLUMN source_id INTEGER;
    ALTER TABLE runs ADD COLUMN depth INTEGER DEFAULT 0;
    UPDATE runs SET prompts = c.prompts, tools = c.tools, depth = c.depth FROM (
        SELECT trace_id, count(*) FILTER (WHERE kind = 'turn') AS prompts,
               coalesce(sum(len(string_split(name, ', '))) FILTER (WHERE kind = 'tools:execute'), 0) AS tools,
               max(depth) AS depth
        FROM spans GROUP BY trace_id
    ) c WHERE runs.trace_id = c.trace_id;
    UPDATE runs SET source_id = e.source_id FROM events e WHERE e.event_id = runs.first_event_id;
    """
    + f"INSERT INTO search_terms {schema_words_7.TERMS};",
    """
    CREATE TABLE snapshot_nodes_8 (
        node_id VARCHAR PRIMARY KEY,
        body JSON NOT NULL USING COMPRESSION uncompressed,
        frames BIGINT NOT NULL,
        prompts BIGINT NOT NULL,
        tools BIGINT NOT NULL,
        tombstones BIGINT NOT NULL
    );
    INSERT INTO snapshot_nodes_8 SELECT * FROM snapshot_nodes;
    DROP TABLE snapshot_nodes;
    ALTER TABLE snapshot_nodes_8 RENAME TO snapshot_nodes;
    -- Altered before emptied: DuckDB 1.5 refuses to commit a transaction that alters a table it deleted from.
    ALTER TABLE rewind_frames ADD COLUMN aggregate JSON;
    ALTER TABLE rewind_chunks ADD COLUMN aggregate JSON;
    DELETE FROM rewind_runs;
    DELETE FROM rewind_frames;
    DELETE FROM rewind_chunks;
    """,
    """
    ALTER TABLE runs ADD COLUMN name_key DOUBLE;
    ALTER TABLE runs ADD COLUMN name_span VARCHAR;
    """,
    """
    CREATE TABLE span_labels (
        run INTEGER NOT NULL, name VARCHAR NOT NULL, kind VARCHAR NOT NULL, spans BIGINT NOT NULL
    );
    INSERT INTO span_labels
    SELECT k.run, s.name, s.kind, count(*)
    FROM spans s JOIN keyed_runs k USING (trace_id)
    WHERE NOT s.instant AND s.kind NOT IN ('promptAgent', 'model:call')
    GROUP BY ALL;
    CREATE TABLE span_grams (run INTEGER NOT NULL, gram VARCHAR NOT NULL);
    INSERT INTO span_grams
    WITH shown_spans AS (
        SELECT k.run, s.name, s.agent_id, s.call_id, s.error, s.span_id
        FROM spans s JOIN keyed_runs k USING (trace_id)
        WHERE NOT s.instant AND s.kind NOT IN ('promptAgent', 'model:call')
    ),
    shapes AS (
        SELECT run, t FROM (SELECT DISTINCT run, name, agent_id, error FROM shown_spans),
                           unnest([name, agent_id, error]) AS f(t)
        UNION SELECT DISTINCT run, regexp_replace(call_id, '[0-9]+', '0', 'g') FROM shown_spans
        UNION SELECT DISTINCT run, span_id FROM shown_spans WHERE NOT regexp_full_match(lower(span_id), '[0-9a-f]*')
    ),
    normal AS (SELECT DISTINCT run, regexp_replace(lower(t), '[0-9]+', '0', 'g') AS t FROM shapes WHERE t IS NOT NULL)
    SELECT DISTINCT run, substr(t, i::INTEGER, n::INTEGER)
    FROM normal, range(1, 4) AS ns(n), range(1, length(t) + 1) AS r(i) WHERE i + n - 1 <= length(t);
    CREATE TABLE agent_generations (
        key UBIGINT NOT NULL,
        run INTEGER NOT NULL,
        call_id VARCHAR NOT NULL,
        name VARCHAR NOT NULL,
        end_ts DOUBLE NOT NULL,
        end_event_id BIGINT NOT NULL
    );
    INSERT INTO agent_generations
    SELECT hash(a.trace_id, a.call_id) AS key, k.run, a.call_id, g.name, g.end_ts, g.end_event_id
    FROM spans a JOIN spans g ON g.trace_id = a.trace_id AND g.parent_span_id = a.span_id
    JOIN keyed_runs k ON k.trace_id = a.trace_id
    WHERE a.kind = 'agent' AND a.call_id IS NOT NULL AND g.kind = 'generation' AND g.end_event_id IS NOT NULL
    ORDER BY key;
    CREATE INDEX agent_generations_key ON agent_generations (key);
    CREATE INDEX frame_keys_key ON frame_keys (key);
    CREATE TABLE span_tiles_fine AS SELECT * FROM span_tiles LIMIT 0;
    INSERT INTO span_tiles_fine
    SELECT s.trace_id, s.depth,
           least(floor((s.start_ts - k.tile_origin) / (k.tile_ms / 4)), 65536 - 1)::BIGINT AS start_tile,
           least(floor((coalesce(s.end_ts, r.ended_ts) - k.tile_origin) / (k.tile_ms / 4)), 65536 - 1)::BIGINT,
           min(s.start_ts), max(coalesce(s.end_ts, r.ended_ts)), count(*), any_value(s.span_id), s.kind,
           any_value(s.name), count(*) FILTER (WHERE s.status = 'failed'),
           count(*) FILTER (WHERE s.status = 'running'), count(*) FILTER (WHERE s.cache),
           CASE WHEN min(hash(s.frame_parent_id)) = max(hash(s.frame_parent_id)) THEN any_value(s.frame_parent_id) END,
           min(hash(s.name)) = max(hash(s.name))
    FROM spans s JOIN keyed_runs k USING (trace_id) JOIN runs r USING (trace_id)
    WHERE NOT s.instant AND s.kind NOT IN ('promptAgent', 'model:call')
    GROUP BY ALL
    ORDER BY s.trace_id, start_tile;
    """,
    """
    CREATE TABLE rewind_file AS SELECT file_id FROM rewind.rewind_file;
    DROP TABLE snapshots;
    DROP TABLE snapshot_nodes;
    DROP TABLE rewind_runs;
    DROP TABLE rewind_frames;
    DROP TABLE rewind_chunks;
    DROP SEQUENCE rewind_builds;
    """,
    """
    CREATE TABLE search_blocks (trace_id VARCHAR NOT NULL, block BIGINT NOT NULL, term VARCHAR NOT NULL);
    CREATE TABLE search_blocks_since AS SELECT coalesce(max(event_id) + 1, 0)::BIGINT AS event_id FROM events;
    CREATE TABLE span_failures (
        run INTEGER NOT NULL,
        span_id VARCHAR NOT NULL,
        parent_span_id VARCHAR,
        kind VARCHAR NOT NULL,
        instant BOOLEAN NOT NULL,
        start_ts DOUBLE NOT NULL,
        end_ts DOUBLE,
        error VARCHAR,
        end_event_id BIGINT,
        depth INTEGER NOT NULL,
        start_event_id BIGINT,
        name VARCHAR,
        call_id VARCHAR
    );
    INSERT INTO span_failures
    SELECT k.run, s.span_id, s.parent_span_id, s.kind, s.instant, s.start_ts, s.end_ts, s.error, s.end_event_id,
           s.depth, s.start_event_id, s.name, s.call_id
    FROM spans s JOIN keyed_runs k USING (trace_id)
    WHERE s.status = 'failed'
    ORDER BY k.run, s.start_ts, s.start_event_id;
    """,
    """
    CREATE TABLE call_prints (
        trace_id VARCHAR NOT NULL, bucket UBIGINT NOT NULL, call_id VARCHAR NOT NULL, pos BIGINT NOT NULL,
        event_id BIGINT NOT NULL, idx INTEGER NOT NULL, mem_ev BIGINT NOT NULL, h_in UBIGINT, h_out UBIGINT,
        h_err UBIGINT, h_mem UBIGINT NOT NULL, served INTEGER NOT NULL
    );
    CREATE TABLE print_buckets (
        trace_id VARCHAR NOT NULL, bucket UBIGINT NOT NULL, calls BIGINT NOT NULL, digest UBIGINT NOT NULL,
        cached BIGINT NOT NULL, live BIGINT NOT NULL
    );
    CREATE TABLE printed_runs (trace_id VARCHAR NOT NULL);
    """,
    # `call_prints.POS` with its step, 1 << 20, as it was when this ran.
    """
    UPDATE call_prints SET pos = (call_prints.event_id - r.first_event_id) * 1048576 + call_prints.idx + 2
    FROM runs r WHERE r.trace_id = call_prints.trace_id;
    """,
    """
    CREATE TABLE unindexed (trace_id VARCHAR NOT NULL, after_event_id BIGINT NOT NULL);
    """,
]
