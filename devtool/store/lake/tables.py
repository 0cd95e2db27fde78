"""The lake's tables (in the DuckLake, attached as `lake`) and the local ones that track it.

The lake holds what a run's pages and a teammate's SQL need, in columns of its own (not the local
schema's, which changes with each release): `runs` (the runs list's row, with who published it and
when), `events` (each event's stored text `body`, its key within its trace, and the publisher's
`event_id`, whose order is the load order), `spans` and `search_terms` (as the publisher derived
them), `journal_entries` (those of the run's invocations), `snapshots` and `snapshot_nodes` (a
snapshot's top and its frame nodes, content-addressed) with `snapshot_links` (which nodes each
snapshot needs). `lake_version` says which shape the tables have. `publish_turn` is one row that
every publish of a run the lake does not list yet updates (`publish.py`): DuckLake has no unique keys,
but it refuses to commit an insert into a table another transaction deleted from meanwhile, so of two
publishes of the same new run one commits and the other is tried again, and then finds it listed.

Locally (in the store's main file, made when a lake is first attached): `lake_published` (a run
published, through which event; written only after the lake's commit, so a server killed between the
two publishes the run again, and adds nothing), `lake_published_snapshots`, and `lake_runs`, the
lake's runs list as last read, so the runs page lists the team's runs at local speed, and
`lake_opening`, the runs being copied from the lake (`opening.py`), with the cut of the part copied first,
and `lake_unordered`, the runs a span link copied out of order (`prefix.py` says why that matters).
"""

from __future__ import annotations

LAKE_VERSION = 1

# Rows a Parquet row group of the lake's `events` holds (DuckLake's `parquet_row_group_size`, scoped to
# that table; DuckDB's default is 122,880). A read of a few thousand events by their ids or times (a
# run's head, a chunk of its copy, a span link's events) decodes the whole row groups it touches, bodies
# and all: at the default a 2,000-event head decoded 122,880 bodies (~86 MB of text). Five DuckDB
# vectors: the files are as small (BENCHMARKS.md, "The first paint from the lake: row groups").
EVENTS_ROW_GROUP = 10_240

RUN_COLUMNS = (
    "trace_id, name, status, started_ts, ended_ts, events, spans, agents, failed, running, prompt_tokens, "
    "completion_tokens, cost_micro_usd, unpriced_calls, prompts, tools, agent_ids"
)

_RUNS = """
    trace_id VARCHAR NOT NULL, name VARCHAR, status VARCHAR, started_ts DOUBLE, ended_ts DOUBLE,
    events BIGINT, spans BIGINT, agents BIGINT, failed BIGINT, running BIGINT, prompt_tokens BIGINT,
    completion_tokens BIGINT, cost_micro_usd DOUBLE, unpriced_calls BIGINT, prompts BIGINT, tools BIGINT,
    agent_ids VARCHAR, published_by VARCHAR, published_at TIMESTAMPTZ
"""

LAKE_TABLES = f"""
    CREATE TABLE IF NOT EXISTS devtool_lake.lake_version (version INTEGER);
    CREATE TABLE IF NOT EXISTS devtool_lake.publish_turn (turn BIGINT NOT NULL);
    CREATE TABLE IF NOT EXISTS devtool_lake.runs ({_RUNS});
    CREATE TABLE IF NOT EXISTS devtool_lake.events (
        trace_id VARCHAR NOT NULL, event_key UBIGINT NOT NULL, event_id BIGINT, span_id VARCHAR,
        parent_span_id VARCHAR, type VARCHAR, ts DOUBLE, agent_id VARCHAR, call_id VARCHAR,
        prompt_tokens BIGINT, completion_tokens BIGINT, cost_micro_usd DOUBLE, body VARCHAR NOT NULL
    );
    CREATE TABLE IF NOT EXISTS devtool_lake.spans (
        trace_id VARCHAR NOT NULL, span_id VARCHAR, parent_span_id VARCHAR, kind VARCHAR, instant BOOLEAN,
        name VARCHAR, agent_id VARCHAR, call_id VARCHAR, start_ts DOUBLE, end_ts DOUBLE, status VARCHAR,
        error VARCHAR, depth INTEGER, events INTEGER
    );
    CREATE TABLE IF NOT EXISTS devtool_lake.search_terms (trace_id VARCHAR NOT NULL, term VARCHAR NOT NULL);
    CREATE TABLE IF NOT EXISTS devtool_lake.journal_entries (
        process_id VARCHAR, entry_id VARCHAR, entry_type VARCHAR, timestamp VARCHAR, ts_ms DOUBLE,
        data VARCHAR, trace_id VARCHAR, entry_seq BIGINT
    );
    CREATE TABLE IF NOT EXISTS devtool_lake.snapshots (
        snapshot_id VARCHAR NOT NULL, parent_id VARCHAR, trace_id VARCHAR, span_id VARCHAR, anchor VARCHAR,
        source VARCHAR, created_at TIMESTAMPTZ, body VARCHAR, created_by VARCHAR, root_id VARCHAR
    );
    CREATE TABLE IF NOT EXISTS devtool_lake.snapshot_nodes (
        node_id VARCHAR NOT NULL, body VARCHAR, frames BIGINT, prompts BIGINT, tools BIGINT, tombstones BIGINT
    );
    CREATE TABLE IF NOT EXISTS devtool_lake.snapshot_links (snapshot_id VARCHAR NOT NULL, node_id VARCHAR NOT NULL);
"""

LOCAL_TABLES = f"""
    CREATE TABLE IF NOT EXISTS lake_published (
        trace_id VARCHAR PRIMARY KEY, last_event_id BIGINT NOT NULL, published_at TIMESTAMPTZ DEFAULT now()
    );
    CREATE TABLE IF NOT EXISTS lake_published_snapshots (snapshot_id VARCHAR PRIMARY KEY);
    CREATE TABLE IF NOT EXISTS lake_runs ({_RUNS});
    CREATE TABLE IF NOT EXISTS lake_opening (trace_id VARCHAR PRIMARY KEY, cut BIGINT NOT NULL, total BIGINT NOT NULL);
    CREATE TABLE IF NOT EXISTS lake_unordered (trace_id VARCHAR PRIMARY KEY);
"""
