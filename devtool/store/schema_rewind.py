"""The tables of the store's rewind file (`rewind_file.py`), as its own list of migrations: `MIGRATIONS[n - 1]`
takes the file to version n. Never edit a released migration; append a new one.

The statements run on the store's connection with the file attached as `rewind`, so its tables are
named `rewind.<table>` and an unqualified name is the main file's.

- `rewind_file`: one row, the file's random id, which the main file keeps too (its migration 11), so
  that a store opened with another store's rewind file beside it is refused.
- `snapshots`: AgentSnapshots under a stable content id, with the id they were forked from and who
  first stored them. A snapshot is a tree of frame nodes (`devtool.core.snapshot_tree`): `body` is
  its top (the document with `root` as the root's node id, `root_id`), its id the top's SHA-256; a
  row stored before snapshots were trees (`root_id` NULL) holds the whole document under the SHA-256
  of its canonical JSON, and becomes a tree when it is first read.
- `snapshot_nodes`: one row per frame node, shared by every snapshot that has the frame, with the
  counts of its subtree (frames, prompt and tool entries, tombstones) for the snapshot page. `body`
  is uncompressed: a snapshot page reads its frames a hundred at a time by id, and with zstd every
  such read decompressed the bodies of all the stored nodes.
- `rewind_runs`, `rewind_frames`, `rewind_chunks`: the frame index of a big run
  (`devtool.core.frame_index`, `frame_index_tables.py`), written a batch at a time under a `build`
  number (`rewind_builds`) and used once `rewind_runs` names that build; per frame, when it was made
  and last changed, its events, its sealed node and its `budgetState.aggregate`; the chunks of a wide
  frame's children (`devtool.core.snapshot_tree.child_refs`).

Migration 1 makes these tables, in the shapes the main file's migrations 1-10 had given them there,
and copies the snapshots and their nodes from the main file, which drops its own in its migration
11. The frame indexes are not copied: the server makes them again.
"""

from __future__ import annotations

MIGRATIONS: list[str] = [
    """
    CREATE TABLE rewind.rewind_file AS SELECT uuid()::VARCHAR AS file_id;
    CREATE TABLE rewind.snapshots (
        snapshot_id VARCHAR PRIMARY KEY,
        parent_id VARCHAR,
        trace_id VARCHAR,
        span_id VARCHAR,
        anchor VARCHAR,
        source VARCHAR,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        body JSON NOT NULL,
        created_by VARCHAR,
        root_id VARCHAR
    );
    CREATE TABLE rewind.snapshot_nodes (
        node_id VARCHAR PRIMARY KEY,
        body JSON NOT NULL USING COMPRESSION uncompressed,
        frames BIGINT NOT NULL,
        prompts BIGINT NOT NULL,
        tools BIGINT NOT NULL,
        tombstones BIGINT NOT NULL
    );
    CREATE SEQUENCE rewind.rewind_builds START 1;
    CREATE TABLE rewind.rewind_runs (
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
    CREATE TABLE rewind.rewind_frames (
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
        events BIGINT[] NOT NULL,
        aggregate JSON
    );
    CREATE TABLE rewind.rewind_chunks (
        trace_id VARCHAR NOT NULL,
        build BIGINT NOT NULL,
        frame INTEGER NOT NULL,
        level INTEGER NOT NULL,
        position INTEGER NOT NULL,
        last BIGINT NOT NULL,
        running BOOLEAN NOT NULL,
        node_id VARCHAR NOT NULL,
        aggregate JSON
    );
    INSERT INTO rewind.snapshots BY NAME SELECT * FROM snapshots;
    INSERT INTO rewind.snapshot_nodes BY NAME SELECT * FROM snapshot_nodes;
    """,
]
