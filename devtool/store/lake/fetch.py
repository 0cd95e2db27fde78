"""Reading the lake: its runs list (mirrored locally), and a run or a snapshot opened from it.

A DevTool lists the team's runs from `lake_runs`, a local copy of the lake's `runs` that the lake
worker refreshes every few seconds (one small read of the catalog), so the runs page stays a local
query. A run is opened from the lake once: its events' texts are written, in their publisher's order,
to a file beside the store and loaded through the same `load_file` every file takes (the event gate,
the exactly-once keys, spans, search words, a big run's keys), with its snapshots; from then on its
pages are local pages, at local speed. A snapshot link whose snapshot this DevTool lacks is looked up
in the lake and copied in (its top and its frame nodes) the same way.
"""

from __future__ import annotations

import hashlib
import os
import threading
from contextlib import closing
from dataclasses import replace

import duckdb

from devtool.store.database import Store
from devtool.store.errors import StoreError
from devtool.store.lake.attach import Lake
from devtool.store.lake.config import LakeError
from devtool.store.lake.publish import mark_published
from devtool.store.load import LoadResult, load_file

# The events' texts, one a line, as a trace file holds them: written as CSV with nothing quoted and a
# delimiter no JSON text holds raw (JSON escapes control characters), so each line is the text itself.
# In the order the lake holds them: each publish writes its events sorted by the publisher's event id,
# and a scan reads the files in the order they were added. Neither a sort nor a search for repeated keys
# here: over a million events' texts either ran a server's 640 MiB of memory out (DuckDB 1.5.5).
_WRITE = (
    "COPY (SELECT body FROM devtool_lake.events WHERE trace_id = $trace) TO '{path}' "
    "(FORMAT csv, HEADER false, QUOTE '', ESCAPE '', DELIMITER e'\\x01')"
)
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


def open_run(store: Store, lake: Lake, trace_id: str) -> LoadResult | None:
    """Copy run `trace_id` from the lake into the store (None: the lake has no such run); loading it
    again adds nothing."""
    if not in_lake(store, trace_id):
        return None
    # Named by a hash: a trace id is the agent's text, not a file name.
    name = hashlib.sha256(trace_id.encode()).hexdigest()[:16]
    path = store.path.parent / f".{store.path.name}.lake-{name}-{os.getpid()}-{threading.get_ident()}.jsonl"
    try:
        with closing(store.reader()) as conn:
            conn.execute(_WRITE.format(path=str(path).replace("'", "''")), {"trace": trace_id})
        result = load_file(store, path)
    except (duckdb.Error, StoreError) as exc:
        raise LakeError(f"cannot read run {trace_id} from the lake: {str(exc).strip().splitlines()[0]}") from None
    finally:
        path.unlink(missing_ok=True)
    with store.transaction(derives=False) as conn:
        # The file is gone: the source names where the run came from instead.
        conn.execute(
            "UPDATE sources SET path = ? WHERE source_id = ?", [f"lake ({lake.config.shown})", result.source_id]
        )
    # A transaction of its own: one transaction writes one database, and these are the rewind file's.
    with store.transaction(derives=False) as conn:
        _copy_snapshots(conn, "trace_id = $key", trace_id)
    through = store.query("SELECT last_event_id FROM runs WHERE trace_id = ?", [trace_id])
    if through:
        # Its events are the lake's: it need not be published back.
        mark_published(store, trace_id, int(through[0][0]))
    return replace(result, path=path.with_name(f"lake:{trace_id}"))


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
