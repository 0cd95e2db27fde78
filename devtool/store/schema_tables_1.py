"""The store's first tables, as the first release made them: migration 1's SQL, frozen.

A released migration never changes (`schema.py`): later migrations alter these tables, and what they
are now is the sum of both, told in `schema.py`'s docstring.
"""

from __future__ import annotations

from typing import Final

TABLES: Final = """
    CREATE SEQUENCE source_ids START 1;
    CREATE TABLE sources (
        source_id INTEGER PRIMARY KEY,
        kind VARCHAR NOT NULL,
        path VARCHAR NOT NULL,
        content_hash VARCHAR UNIQUE,
        bytes BIGINT NOT NULL DEFAULT 0,
        modified_ns BIGINT,
        events BIGINT NOT NULL DEFAULT 0,
        journal_entries BIGINT NOT NULL DEFAULT 0,
        bad_lines BIGINT NOT NULL DEFAULT 0,
        loaded_at TIMESTAMPTZ NOT NULL DEFAULT now()
    );
    CREATE TABLE events (
        event_id BIGINT NOT NULL,
        source_id INTEGER NOT NULL,
        trace_id VARCHAR NOT NULL,
        span_id VARCHAR NOT NULL,
        parent_span_id VARCHAR,
        type VARCHAR NOT NULL,
        ts DOUBLE NOT NULL,
        agent_id VARCHAR,
        call_id VARCHAR,
        content_hash VARCHAR,
        cache BOOLEAN,
        success BOOLEAN,
        label VARCHAR,
        error VARCHAR,
        prompt_tokens BIGINT,
        completion_tokens BIGINT,
        body JSON NOT NULL USING COMPRESSION zstd
    );
    CREATE TABLE spans (
        trace_id VARCHAR NOT NULL,
        span_id VARCHAR NOT NULL,
        parent_span_id VARCHAR,
        kind VARCHAR NOT NULL,
        instant BOOLEAN NOT NULL,
        name VARCHAR NOT NULL,
        agent_id VARCHAR,
        call_id VARCHAR,
        start_ts DOUBLE NOT NULL,
        end_ts DOUBLE,
        status VARCHAR NOT NULL,
        error VARCHAR,
        content_hash VARCHAR,
        cache BOOLEAN,
        start_event_id BIGINT,
        end_event_id BIGINT,
        events INTEGER NOT NULL,
        depth INTEGER NOT NULL DEFAULT 0,
        frame_parent_id VARCHAR,
        frame_children INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE runs (
        trace_id VARCHAR PRIMARY KEY,
        name VARCHAR NOT NULL,
        started_ts DOUBLE NOT NULL,
        ended_ts DOUBLE NOT NULL,
        status VARCHAR NOT NULL,
        events BIGINT NOT NULL,
        spans BIGINT NOT NULL,
        agents BIGINT NOT NULL,
        failed BIGINT NOT NULL,
        running BIGINT NOT NULL,
        prompt_tokens BIGINT NOT NULL,
        completion_tokens BIGINT NOT NULL,
        agent_ids VARCHAR NOT NULL,
        first_event_id BIGINT NOT NULL,
        last_event_id BIGINT NOT NULL
    );
    CREATE TABLE journal_entries (
        entry_seq BIGINT NOT NULL,
        source_id INTEGER NOT NULL,
        process_id VARCHAR NOT NULL,
        entry_id VARCHAR NOT NULL,
        entry_type VARCHAR NOT NULL,
        timestamp VARCHAR NOT NULL,
        ts_ms DOUBLE NOT NULL,
        data JSON NOT NULL,
        trace_id VARCHAR
    );
    CREATE TABLE snapshots (
        snapshot_id VARCHAR PRIMARY KEY,
        parent_id VARCHAR,
        trace_id VARCHAR,
        span_id VARCHAR,
        anchor VARCHAR,
        source VARCHAR,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        body JSON NOT NULL
    );
    """
