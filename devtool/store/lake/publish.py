"""Publishing a finished run to the lake, all or nothing, exactly once.

One catalog transaction adds the run's events the lake does not hold yet (an anti join on the
event's key within its trace, as every local door does), its search words likewise, the journal
entries of its invocations, and, when it added events or the lake has no row for it, its spans and
its runs row anew (deleted and written again: a run that grew since is counted whole). A run the lake
holds already adds nothing. Only after that commit is the run marked published locally
(`lake_published`, with the last event it covered): a server killed in between finds it unmarked on
restart and publishes it again, which then adds nothing. Conflicts with other publishers are retried
(`retry.py`). Snapshots are published on their own (made after their run's publish, from a rewind),
each with its frame nodes, the nodes the lake has not stored yet.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from devtool.store.database import Store
from devtool.store.errors import NotFoundError
from devtool.store.lake.attach import Lake
from devtool.store.lake.retry import in_lake_transaction
from devtool.store.lake.tables import RUN_COLUMNS
from devtool.store.snapshots import get_snapshot, read_nodes

_EVENTS = """
    INSERT INTO lake.events
    SELECT trace_id, event_key, event_id, span_id, parent_span_id, type, ts, agent_id, call_id,
           prompt_tokens, completion_tokens, cost_micro_usd, body::VARCHAR
    FROM main.events e
    WHERE trace_id = $trace AND event_id <= $through
      AND event_key NOT IN (SELECT event_key FROM lake.events WHERE trace_id = $trace)
    ORDER BY event_id
"""
_SPANS = """
    INSERT INTO lake.spans
    SELECT trace_id, span_id, parent_span_id, kind, instant, name, agent_id, call_id, start_ts, end_ts, status,
           error, depth, events
    FROM main.spans WHERE trace_id = $trace
"""
_TERMS = """
    INSERT INTO lake.search_terms
    SELECT DISTINCT trace_id, term FROM main.search_terms
    WHERE trace_id = $trace AND term NOT IN (SELECT term FROM lake.search_terms WHERE trace_id = $trace)
"""
_JOURNAL = """
    INSERT INTO lake.journal_entries
    SELECT process_id, entry_id, entry_type, timestamp, ts_ms, data::VARCHAR, trace_id, entry_seq
    FROM main.journal_entries j
    WHERE trace_id = $trace
      AND NOT EXISTS (SELECT 1 FROM lake.journal_entries l
                      WHERE l.trace_id = $trace AND l.process_id = j.process_id AND l.entry_id = j.entry_id)
"""
_RUN = f"""
    INSERT INTO lake.runs SELECT {RUN_COLUMNS}, $node, now() FROM main.runs WHERE trace_id = $trace
"""


@dataclass(frozen=True, slots=True)
class Published:
    """What publishing one run did: the events it added (0: the lake held them all already)."""

    trace_id: str
    events: int
    already: bool


def publish_run(store: Store, lake: Lake, trace_id: str) -> Published:
    """Publish run `trace_id` of `store` to `lake` (`NotFoundError`: no such run here)."""
    rows = store.query("SELECT last_event_id FROM runs WHERE trace_id = ?", [trace_id])
    if not rows:
        raise NotFoundError(f"no run {trace_id!r} in the store")
    through = int(rows[0][0])
    params = {"trace": trace_id, "through": through}

    def publish(conn: duckdb.DuckDBPyConnection) -> int:
        added = _count(conn.execute(_EVENTS, params))
        conn.execute(_TERMS, {"trace": trace_id})
        conn.execute(_JOURNAL, {"trace": trace_id})
        listed = conn.execute("SELECT count(*) FROM lake.runs WHERE trace_id = ?", [trace_id]).fetchall()[0][0]
        if added or not listed:
            if listed:
                conn.execute("DELETE FROM lake.spans WHERE trace_id = ?", [trace_id])
                conn.execute("DELETE FROM lake.runs WHERE trace_id = ?", [trace_id])
            conn.execute(_SPANS, {"trace": trace_id})
            conn.execute(_RUN, {"trace": trace_id, "node": lake.node})
        return added

    added = in_lake_transaction(store, publish)
    mark_published(store, trace_id, through)
    return Published(trace_id, added, already=added == 0)


def publish_snapshot(store: Store, lake: Lake, snapshot_id: str) -> bool:
    """Publish snapshot `snapshot_id` with its frame nodes; whether the lake did not hold it yet."""
    stored = get_snapshot(store, snapshot_id)
    nodes = read_nodes(store, [stored.root_id])

    def publish(conn: duckdb.DuckDBPyConnection) -> bool:
        if conn.execute("SELECT 1 FROM lake.snapshots WHERE snapshot_id = ?", [snapshot_id]).fetchall():
            return False
        conn.execute(
            "INSERT INTO lake.snapshots SELECT snapshot_id, parent_id, trace_id, span_id, anchor, source, created_at, "
            "body::VARCHAR, created_by, root_id FROM rewind.snapshots WHERE snapshot_id = ?",
            [snapshot_id],
        )
        ids = list(nodes)
        conn.execute("INSERT INTO lake.snapshot_links SELECT ?, unnest(?::VARCHAR[])", [snapshot_id, ids])
        conn.execute(
            """
            INSERT INTO lake.snapshot_nodes
            SELECT node_id, body::VARCHAR, frames, prompts, tools, tombstones FROM rewind.snapshot_nodes
            WHERE node_id = ANY($ids)
              AND node_id NOT IN (SELECT node_id FROM lake.snapshot_nodes WHERE node_id = ANY($ids))
            """,
            {"ids": ids},
        )
        return True

    added = in_lake_transaction(store, publish)
    with store.transaction(derives=False) as conn:
        conn.execute("INSERT OR IGNORE INTO lake_published_snapshots VALUES (?)", [snapshot_id])
    return added


def mark_published(store: Store, trace_id: str, through: int) -> None:
    """Note locally that the lake holds run `trace_id` through local event `through`."""
    with store.transaction(derives=False) as conn:
        conn.execute(
            "INSERT OR REPLACE INTO lake_published (trace_id, last_event_id) VALUES (?, ?)",
            [trace_id, through],
        )


def unpublished_runs(store: Store, *, limit: int = 50) -> list[str]:
    """Finished runs (not `running`) the lake does not hold through their last event, oldest first."""
    rows = store.query(
        """
        SELECT r.trace_id FROM runs r LEFT JOIN lake_published p USING (trace_id)
        WHERE r.status <> 'running' AND (p.trace_id IS NULL OR p.last_event_id < r.last_event_id)
        ORDER BY r.last_event_id LIMIT ?
        """,
        [limit],
    )
    return [row[0] for row in rows]


def unpublished_snapshots(store: Store, *, limit: int = 50) -> list[str]:
    """Stored snapshots (tree-shaped) not published yet."""
    rows = store.query(
        """
        SELECT snapshot_id FROM rewind.snapshots
        WHERE root_id IS NOT NULL AND snapshot_id NOT IN (SELECT snapshot_id FROM lake_published_snapshots)
        ORDER BY created_at LIMIT ?
        """,
        [limit],
    )
    return [row[0] for row in rows]


def _count(result: duckdb.DuckDBPyConnection) -> int:
    row = result.fetchone()
    return int(row[0]) if row else 0
