"""Publishing a finished run to the lake, all or nothing, exactly once.

One catalog transaction adds the run's events the lake does not hold yet (an anti join on the
event's key within its trace, as every local door does), its search words likewise, the journal
entries of its invocations, and, when it added events or the lake has no row for it, its spans and
its runs row anew (deleted and written again: a run that grew since is counted whole). A run the lake
holds already adds nothing. Only after that commit is the run marked published locally
(`lake_published`, with the last event it covered): a server killed in between finds it unmarked on
restart and publishes it again, which then adds nothing. Conflicts with other publishers are retried
(`retry.py`); so is a publish that raced another of a run new to the lake (both took the lake's
publish turn, `tables.py`), which then finds the run listed and adds nothing. Snapshots are published
on their own (made after their run's publish, from a rewind), each with its frame nodes, the nodes the
lake has not stored yet.
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

# The runs being published, each with the last local event it covers: `$traces`, `$throughs`.
_BATCH = "SELECT unnest($traces::VARCHAR[]) AS trace_id, unnest($throughs::BIGINT[]) AS through"
_EVENTS = f"""
    INSERT INTO devtool_lake.events
    SELECT e.trace_id, event_key, event_id, span_id, parent_span_id, type, ts, agent_id, call_id,
           prompt_tokens, completion_tokens, cost_micro_usd, body::VARCHAR
    FROM main.events e JOIN ({_BATCH}) b ON e.trace_id = b.trace_id AND e.event_id <= b.through
    {{unseen}}
    ORDER BY e.trace_id, event_id
"""
# For a run the lake lists already: only the events it does not hold (by key within the trace).
_UNSEEN_EVENTS = "WHERE event_key NOT IN (SELECT event_key FROM devtool_lake.events WHERE trace_id = ANY($traces))"
_SPANS = """
    INSERT INTO devtool_lake.spans
    SELECT trace_id, span_id, parent_span_id, kind, instant, name, agent_id, call_id, start_ts, end_ts, status,
           error, depth, events
    FROM main.spans WHERE trace_id = ANY($traces)
"""
_TERMS = """
    INSERT INTO devtool_lake.search_terms
    SELECT DISTINCT trace_id, term FROM main.search_terms t
    WHERE trace_id = ANY($traces) {unseen}
"""
_UNSEEN_TERMS = (
    "AND NOT EXISTS (SELECT 1 FROM devtool_lake.search_terms l WHERE l.trace_id = t.trace_id AND l.term = t.term)"
)
_JOURNAL = """
    INSERT INTO devtool_lake.journal_entries
    SELECT process_id, entry_id, entry_type, timestamp, ts_ms, data::VARCHAR, trace_id, entry_seq
    FROM main.journal_entries j
    WHERE trace_id = ANY($traces) {unseen}
"""
_UNSEEN_ENTRIES = """
    AND NOT EXISTS (SELECT 1 FROM devtool_lake.journal_entries l
                    WHERE l.trace_id = j.trace_id AND l.process_id = j.process_id AND l.entry_id = j.entry_id)
"""
_RUNS = f"""
    INSERT INTO devtool_lake.runs SELECT {RUN_COLUMNS}, $node, now() FROM main.runs WHERE trace_id = ANY($traces)
"""


@dataclass(frozen=True, slots=True)
class Published:
    """What publishing one run did: the events it added (0: the lake held them all already)."""

    trace_id: str
    events: int
    already: bool


def publish_run(store: Store, lake: Lake, trace_id: str) -> Published:
    """Publish run `trace_id` of `store` to `lake` (`NotFoundError`: no such run here)."""
    return publish_runs(store, lake, [trace_id])[0]


def publish_runs(store: Store, lake: Lake, trace_ids: list[str]) -> list[Published]:
    """Publish runs `trace_ids` of `store` in one lake transaction (all or nothing, together), in order.

    The lake is read once, for which of them it lists: a run it does not list has none of its rows
    there (a run's rows are committed together), so its rows are written without looking; a run it
    lists has only what the lake lacks added, and its spans and runs row written anew if it grew.
    """
    found = dict(
        store.query("SELECT trace_id, last_event_id FROM runs WHERE trace_id = ANY(?::VARCHAR[])", [trace_ids])
    )
    for trace_id in trace_ids:
        if trace_id not in found:
            raise NotFoundError(f"no run {trace_id!r} in the store")
    local = dict(
        store.query(
            f"SELECT e.trace_id, count(*) FROM events e JOIN ({_BATCH}) b "
            "ON e.trace_id = b.trace_id AND e.event_id <= b.through GROUP BY ALL",
            {"traces": trace_ids, "throughs": [found[t] for t in trace_ids]},
        )
    )

    journaled = {
        row[0]
        for row in store.query(
            "SELECT DISTINCT trace_id FROM journal_entries WHERE trace_id = ANY(?::VARCHAR[])", [trace_ids]
        )
    }

    def batch(traces: list[str]) -> dict[str, object]:
        return {"traces": traces, "throughs": [found[t] for t in traces]}

    def publish(conn: duckdb.DuckDBPyConnection) -> dict[str, int]:
        listed = {
            row[0]
            for row in conn.execute(
                "SELECT DISTINCT trace_id FROM devtool_lake.runs WHERE trace_id = ANY(?::VARCHAR[])", [trace_ids]
            ).fetchall()
        }
        new = [t for t in trace_ids if t not in listed]
        old = [t for t in trace_ids if t in listed]
        if new:
            # Taking the turn (a delete and an insert of its row) makes a publish that raced this one
            # fail its commit, and be tried again: it then sees these runs listed (`tables.py`).
            conn.execute("UPDATE devtool_lake.publish_turn SET turn = turn + 1")
        added = {t: int(local.get(t, 0)) for t in new}
        for traces, seen in ((new, False), (old, True)):
            if not traces:
                continue
            conn.execute(_TERMS.format(unseen=_UNSEEN_TERMS if seen else ""), {"traces": traces})
            if journaled & set(traces):
                conn.execute(_JOURNAL.format(unseen=_UNSEEN_ENTRIES if seen else ""), {"traces": traces})
        if new:
            conn.execute(_EVENTS.format(unseen=""), batch(new))
        for trace_id in old:
            added[trace_id] = _count(conn.execute(_EVENTS.format(unseen=_UNSEEN_EVENTS), batch([trace_id])))
            if added[trace_id]:
                conn.execute("DELETE FROM devtool_lake.spans WHERE trace_id = ?", [trace_id])
                conn.execute("DELETE FROM devtool_lake.runs WHERE trace_id = ?", [trace_id])
        rewritten = [t for t in trace_ids if t not in listed or added[t]]
        if rewritten:
            conn.execute(_SPANS, {"traces": rewritten})
            conn.execute(_RUNS, {"traces": rewritten, "node": lake.node})
        return added

    added = in_lake_transaction(store, publish)
    with store.transaction(derives=False) as conn:
        conn.executemany(
            "INSERT OR REPLACE INTO lake_published (trace_id, last_event_id) VALUES (?, ?)",
            [[t, found[t]] for t in trace_ids],
        )
    return [Published(t, added[t], already=added[t] == 0) for t in trace_ids]


def publish_snapshot(store: Store, lake: Lake, snapshot_id: str) -> bool:
    """Publish snapshot `snapshot_id` with its frame nodes; whether the lake did not hold it yet."""
    stored = get_snapshot(store, snapshot_id)
    nodes = read_nodes(store, [stored.root_id])

    def publish(conn: duckdb.DuckDBPyConnection) -> bool:
        if conn.execute("SELECT 1 FROM devtool_lake.snapshots WHERE snapshot_id = ?", [snapshot_id]).fetchall():
            return False
        conn.execute(
            "INSERT INTO devtool_lake.snapshots SELECT snapshot_id, parent_id, trace_id, span_id, anchor, source, "
            "created_at, body::VARCHAR, created_by, root_id FROM rewind.snapshots WHERE snapshot_id = ?",
            [snapshot_id],
        )
        ids = list(nodes)
        conn.execute("INSERT INTO devtool_lake.snapshot_links SELECT ?, unnest(?::VARCHAR[])", [snapshot_id, ids])
        conn.execute(
            """
            INSERT INTO devtool_lake.snapshot_nodes
            SELECT node_id, body::VARCHAR, frames, prompts, tools, tombstones FROM rewind.snapshot_nodes
            WHERE node_id = ANY($ids)
              AND node_id NOT IN (SELECT node_id FROM devtool_lake.snapshot_nodes WHERE node_id = ANY($ids))
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
    """Finished runs (not `running`) the lake does not hold through their last event, oldest first (not
    those being copied from it)."""
    rows = store.query(
        """
        SELECT r.trace_id FROM runs r LEFT JOIN lake_published p USING (trace_id)
        WHERE r.status <> 'running' AND (p.trace_id IS NULL OR p.last_event_id < r.last_event_id)
          AND r.trace_id NOT IN (SELECT trace_id FROM lake_opening)
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
