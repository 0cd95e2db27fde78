"""The store's rewind file: what lives in it, the move of a store's snapshots into it, and the pair it
makes with its main file (a store opened without its own rewind file is refused, and left as it was)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import duckdb
import pytest

from devtool.actions.frame_indexer import build_index
from devtool.core.debugger import restore_snapshot
from devtool.store import Store, StoreError, append_events, get_snapshot, save_snapshot, store_files
from devtool.store.frame_index_tables import index_state
from devtool.store.rewind_file import ROW_GROUP_SIZE, rewind_path
from devtool.store.schema import MIGRATIONS, REWIND_FILE_AT
from devtool.store.snapshots import write_nodes
from tests.conftest import Trace


def three_agents() -> tuple[Trace, str]:
    """A run of three agents, and the span of its second."""
    run = Trace()
    root = run.start("runWith", agentId="")
    agents = [run.start("agent", root, agentId="a", callId=f"root/agent:a:{n}") for n in range(3)]
    for n, agent in enumerate(agents):
        run.end(agent, success=True, result=n, memory={"n": n})
    run.end(root, success=True, result=None)
    return run, agents[1]


def stored(path: Path) -> tuple[Trace, str, dict[str, Any]]:
    """A store at `path` with a run, a snapshot of it and the run's frame index; the snapshot's id."""
    run, agent = three_agents()
    document = restore_snapshot(run.events, span_id=agent, anchor="after")
    store = Store(path)
    try:
        append_events(store, run.events)
        snapshot = save_snapshot(store, document)
        assert build_index(store, run.trace_id).indexed
    finally:
        store.close()
    return run, snapshot, document


def assert_opens_with(path: Path, snapshot: str, document: dict[str, Any]) -> None:
    """The store at `path` opens and holds its snapshot as it was saved."""
    store = Store(path)
    try:
        assert get_snapshot(store, snapshot).snapshot == document
    finally:
        store.close()


def tables(path: Path) -> set[str]:
    with duckdb.connect(str(path), read_only=True) as conn:
        return {name for (name,) in conn.execute("SELECT table_name FROM duckdb_tables()").fetchall()}


def test_a_store_keeps_its_snapshots_and_frame_indexes_in_its_rewind_file(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    run, snapshot, _ = stored(path)
    moved = {"snapshots", "snapshot_nodes", "rewind_runs", "rewind_frames", "rewind_chunks"}
    assert moved <= tables(rewind_path(path))
    assert not moved & tables(path)
    assert {"events", "spans", "runs"} <= tables(path)
    with duckdb.connect(str(rewind_path(path)), read_only=True) as conn:
        assert conn.execute("SELECT snapshot_id FROM snapshots").fetchall() == [(snapshot,)]
        assert conn.execute("SELECT trace_id FROM rewind_runs WHERE indexed").fetchall() == [(run.trace_id,)]
    assert store_files(path) == (path, tmp_path / "s.duckdb.wal", rewind_path(path), tmp_path / "s.duckdb.rewind.wal")


def before_the_rewind_file(path: Path, snapshot_from: Path) -> None:
    """A store as the version before the rewind file left it, its snapshots in its one file: copied
    from the store at `snapshot_from`."""
    with duckdb.connect(str(path)) as conn:
        conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        for version, migration in enumerate(MIGRATIONS[: REWIND_FILE_AT - 1], start=1):
            conn.execute(migration)
            conn.execute("INSERT INTO schema_version VALUES (?)", [version])
        conn.execute(f"ATTACH '{rewind_path(snapshot_from)}' AS new (READ_ONLY)")
        for table in ("snapshots", "snapshot_nodes"):
            conn.execute(f"INSERT INTO {table} BY NAME SELECT * FROM new.{table}")
        conn.execute(f"ATTACH '{snapshot_from}' AS new_main (READ_ONLY)")
        for table in ("sources", "events"):
            conn.execute(f"INSERT INTO {table} SELECT * FROM new_main.{table}")
    assert not rewind_path(path).exists()


def test_a_store_from_before_moves_its_snapshots_into_a_new_rewind_file(tmp_path: Path) -> None:
    run, snapshot, document = stored(tmp_path / "new.duckdb")
    path = tmp_path / "old.duckdb"
    before_the_rewind_file(path, tmp_path / "new.duckdb")
    store = Store(path)
    try:
        assert store.schema_version == len(MIGRATIONS)
        assert get_snapshot(store, snapshot).snapshot == document
        assert index_state(store, run.trace_id) is None  # not moved: the server makes it again
        assert build_index(store, run.trace_id).indexed
        assert store.query("SELECT * FROM rewind_file") == store.query("SELECT * FROM rewind.rewind_file")
    finally:
        store.close()
    assert "snapshots" not in tables(path)
    assert "snapshots" in tables(rewind_path(path))


def test_a_store_without_its_rewind_file_is_refused_and_nothing_is_made_in_its_place(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    _, snapshot, document = stored(path)
    aside = tmp_path / "aside.rewind"
    rewind_path(path).rename(aside)
    missing = r"keeps its snapshots and rewind indexes in .*s\.duckdb\.rewind, which is missing"
    with pytest.raises(StoreError, match=missing):
        Store(path)
    assert not rewind_path(path).exists()
    aside.rename(rewind_path(path))
    assert_opens_with(path, snapshot, document)


def test_another_stores_rewind_file_is_refused(tmp_path: Path) -> None:
    ours, theirs = tmp_path / "ours.duckdb", tmp_path / "theirs.duckdb"
    _, snapshot, document = stored(ours)
    Store(theirs).close()
    kept = tmp_path / "kept.rewind"
    shutil.copyfile(rewind_path(ours), kept)
    shutil.copyfile(rewind_path(theirs), rewind_path(ours))
    with pytest.raises(StoreError, match=r"is not the rewind file of .*ours\.duckdb \(it belongs to another store"):
        Store(ours)
    shutil.copyfile(kept, rewind_path(ours))
    assert_opens_with(ours, snapshot, document)


def test_a_rewind_file_beside_a_new_database_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    stored(path)
    before = rewind_path(path).read_bytes()
    path.unlink()
    beside = r"lies beside the new database .*s\.duckdb: it holds another store's snapshots"
    with pytest.raises(StoreError, match=beside):
        Store(path)
    assert rewind_path(path).read_bytes() == before


def test_the_rewind_files_row_groups_stay_small_and_its_nodes_read_back_after_a_reopen(tmp_path: Path) -> None:
    # A checkpoint rewrites a grown table's last row group whole: at DuckDB's 122,880 rows, a rewind
    # index's node bodies made each checkpoint read back and hold hundreds of MiB (issue 43).
    path = tmp_path / "s.duckdb"
    nodes = {f"{n:064x}": {"n": n, "text": "x" * 200, "children": []} for n in range(ROW_GROUP_SIZE * 2 + 100)}
    store = Store(path)
    try:
        with store.transaction(derives=False) as conn:
            write_nodes(conn, nodes)
        store.checkpoint(rewind=True)
    finally:
        store.close()
    store = Store(path)  # attached again, as every open does
    try:
        groups = store.query(
            "SELECT row_group_id, max(start + count) - min(start) FROM pragma_storage_info('rewind.snapshot_nodes') "
            "WHERE column_name = 'node_id' GROUP BY row_group_id"
        )
        assert len(groups) == 3
        assert max(rows for _, rows in groups) == ROW_GROUP_SIZE
        last = f"{len(nodes) - 1:064x}"
        assert store.query("SELECT body->>'n' FROM rewind.snapshot_nodes WHERE node_id = ?", [last]) == [
            (str(len(nodes) - 1),)
        ]
    finally:
        store.close()
