"""Reading the lake: its runs list (mirrored locally), and a run's events, journal entries and
snapshots copied from it.

A DevTool lists the team's runs from `lake_runs`, a local copy of the lake's `runs` that the lake
worker refreshes every few seconds (one small read of the catalog), so the runs page stays a local
query. A run's events are copied by range (`copy_events`: a `WHERE` on the lake's events): their texts
are written, in their publisher's order, to a file beside the store and loaded through the same
`load_file` every file takes (the event gate, the exactly-once keys, spans, search words, a big run's
keys), so two ranges that overlap store each event once. `opening.py` says which ranges, when. A
snapshot link whose snapshot this DevTool lacks is looked up in the lake and copied in (its top and its
frame nodes) the same way.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Mapping
from contextlib import closing
from pathlib import Path

import duckdb

from devtool.store.database import Store
from devtool.store.errors import StoreError
from devtool.store.lake.attach import Lake
from devtool.store.lake.config import LakeError
from devtool.store.load import LoadResult, load_file

# The events' texts, one a line, as a trace file holds them: written as CSV with nothing quoted and a
# delimiter no JSON text holds raw (JSON escapes control characters), so each line is the text itself.
# In the order the lake holds them: each publish writes its events sorted by the publisher's event id,
# and a scan reads the files in the order they were added. Neither a sort nor a search for repeated keys
# here: over a million events' texts either ran a server's 640 MiB of memory out (DuckDB 1.5.5).
_WRITE = (
    "COPY (SELECT body FROM devtool_lake.events WHERE trace_id = $trace AND ({where})) TO '{path}' "
    "(FORMAT csv, HEADER false, QUOTE '', ESCAPE '', DELIMITER e'\\x01')"
)
# The run's journal entries (those of the invocations that started it), as a journal file holds them.
_JOURNAL = """
    COPY (SELECT entry_id, process_id, timestamp, entry_type, data::JSON AS data
          FROM devtool_lake.journal_entries WHERE trace_id = $trace ORDER BY process_id, entry_seq)
    TO '{path}' (FORMAT json)
"""
_SNAPSHOTS = """
    INSERT OR IGNORE INTO rewind.snapshots (snapshot_id, parent_id, trace_id, span_id, anchor, source, created_at,
                                           body, created_by, root_id)
    SELECT snapshot_id, parent_id, trace_id, span_id, anchor, source, created_at, body, created_by, root_id
    FROM devtool_lake.snapshots WHERE snapshot_id IN (SELECT snapshot_id FROM devtool_lake.snapshots WHERE {where})
"""
_NODES = """
    INSERT OR IGNORE INTO rewind.snapshot_nodes
    SELECT DISTINCT ON (n.node_id) n.node_id, n.body, n.frames, n.prompts, n.tools, n.tombstones
    FROM devtool_lake.snapshot_nodes n
    WHERE n.node_id IN (SELECT node_id FROM devtool_lake.snapshot_links
                        WHERE snapshot_id IN (SELECT snapshot_id FROM devtool_lake.snapshots WHERE {where}))
"""


def in_lake(store: Store, trace_id: str) -> bool:
    """Whether the lake lists run `trace_id`."""
    return bool(store.query("SELECT 1 FROM devtool_lake.runs WHERE trace_id = ?", [trace_id]))


def copy_events(
    store: Store,
    lake: Lake,
    trace_id: str,
    where: str = "true",
    params: Mapping[str, object] | None = None,
    *,
    keys: bool = True,
) -> LoadResult:
    """Copy the events of run `trace_id` the lake holds and `where` (SQL on the lake's events, with
    `params`) picks into the store; those stored already are not stored again. `keys=False`: the run is
    not keyed by this copy (`load_file`'s), for a run copied in parts and keyed at the end."""
    return _copied(
        store, lake, trace_id, _WRITE.format(where=where, path="{path}"), {"trace": trace_id, **(params or {})}, keys
    )


def copy_journal(store: Store, lake: Lake, trace_id: str) -> LoadResult | None:
    """Copy the journal entries the lake holds of run `trace_id`'s invocations (None: it holds none);
    those stored already are not stored again."""
    if not store.query("SELECT 1 FROM devtool_lake.journal_entries WHERE trace_id = ? LIMIT 1", [trace_id]):
        return None
    return _copied(store, lake, trace_id, _JOURNAL, {"trace": trace_id})


def _copied(
    store: Store, lake: Lake, trace_id: str, copy: str, params: Mapping[str, object], keys: bool = True
) -> LoadResult:
    path = _scratch(store, trace_id)
    try:
        with closing(store.reader()) as conn:
            conn.execute(copy.format(path=str(path).replace("'", "''")), dict(params))
        result = load_file(store, path, keys=keys)
    except (duckdb.Error, StoreError) as exc:
        raise LakeError(f"cannot read run {trace_id} from the lake: {str(exc).strip().splitlines()[0]}") from None
    finally:
        path.unlink(missing_ok=True)
    if not result.already_loaded:
        with store.transaction(derives=False) as conn:
            # The file is gone: the source names where the run came from instead.
            conn.execute(
                "UPDATE sources SET path = ? WHERE source_id = ?", [f"lake ({lake.config.shown})", result.source_id]
            )
    return result


def _scratch(store: Store, trace_id: str) -> Path:
    # Named by a hash: a trace id is the agent's text, not a file name.
    name = hashlib.sha256(trace_id.encode()).hexdigest()[:16]
    return store.path.parent / f".{store.path.name}.lake-{name}-{os.getpid()}-{threading.get_ident()}.jsonl"


def copy_run_snapshots(store: Store, trace_id: str) -> None:
    """Copy the snapshots the lake holds of run `trace_id` (with their frame nodes)."""
    # A transaction of its own: one transaction writes one database, and these are the rewind file's.
    with store.transaction(derives=False) as conn:
        _copy_snapshots(conn, "trace_id = $key", trace_id)


def open_snapshot(store: Store, snapshot_id: str) -> bool:
    """Copy snapshot `snapshot_id` (and its frame nodes) from the lake; whether the lake had it."""
    if not store.query("SELECT 1 FROM devtool_lake.snapshots WHERE snapshot_id = ?", [snapshot_id]):
        return False
    with store.transaction(derives=False) as conn:
        _copy_snapshots(conn, "snapshot_id = $key", snapshot_id)
    with store.transaction(derives=False) as conn:
        conn.execute("INSERT OR IGNORE INTO lake_published_snapshots VALUES (?)", [snapshot_id])
    return True


def _copy_snapshots(conn: duckdb.DuckDBPyConnection, where: str, key: str) -> None:
    conn.execute(_NODES.format(where=where), {"key": key})
    conn.execute(_SNAPSHOTS.format(where=where), {"key": key})


def refresh_listing(store: Store) -> int:
    """Read the lake's runs list into `lake_runs` (one transaction: the page never sees it empty); how
    many runs the lake lists."""
    with store.transaction(derives=False) as conn:
        conn.execute("DELETE FROM lake_runs")
        conn.execute(
            "INSERT INTO lake_runs SELECT DISTINCT ON (trace_id) * FROM devtool_lake.runs "
            "ORDER BY trace_id, published_at DESC"
        )
        return int(conn.execute("SELECT count(*) FROM lake_runs").fetchall()[0][0])
