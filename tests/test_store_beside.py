"""A transaction beside the writer: its inserts do not wait for the write lock, its commit does, and a
key it shares with a writer's transaction fails its commit, not the writer's."""

from __future__ import annotations

import threading
import time

import duckdb
import pytest

from devtool.core.frame_index_records import Batch, IndexedFrame
from devtool.core.snapshot_tree import NodeCounts, node_id
from devtool.store import Store
from devtool.store.frame_index_tables import CHECKPOINT_WAL, BatchWriter

NODE = {"callId": "root/agent:a:0", "children": {}}
KEY = node_id(NODE)
COUNTS = NodeCounts(1, 0, 0, 0)


def store_node(conn: duckdb.DuckDBPyConnection, body: str = '{"a": 1}') -> None:
    conn.execute(
        "INSERT INTO rewind.snapshot_nodes VALUES (?, ?::JSON, 1, 0, 0, 0) ON CONFLICT DO NOTHING", [KEY, body]
    )


def add_run(conn: duckdb.DuckDBPyConnection) -> None:
    conn.execute("INSERT INTO rewind.rewind_runs VALUES ('t', 1, 1, true, NULL, 1, 1, 0.1, now())")


def test_its_inserts_run_while_the_writer_holds_the_lock_and_its_commit_waits(store: Store) -> None:
    inserted, committed = threading.Event(), threading.Event()

    def beside() -> None:
        with store.beside() as conn:
            add_run(conn)
            inserted.set()
        committed.set()

    with store.transaction():
        thread = threading.Thread(target=beside)
        thread.start()
        assert inserted.wait(10)  # its insert did not wait for the writer
        time.sleep(0.3)
        assert not committed.is_set()  # its commit does
        assert store.query("SELECT count(*) FROM rewind.rewind_runs") == [(0,)]
    thread.join(10)
    assert committed.is_set()
    assert store.query("SELECT trace_id FROM rewind.rewind_runs") == [("t",)]


def test_a_key_both_add_fails_its_commit_and_leaves_the_writers(store: Store) -> None:
    def both() -> None:
        with store.beside() as side:
            store_node(side, '{"side": true}')
            with store.transaction() as conn:
                store_node(conn, '{"writer": true}')

    with pytest.raises(duckdb.TransactionException, match="constraint"):
        both()
    assert store.query("SELECT body FROM rewind.snapshot_nodes WHERE node_id = ?", [KEY]) == [('{"writer": true}',)]
    with store.beside() as side:  # the cursor is given back whole
        add_run(side)
    assert store.query("SELECT count(*) FROM rewind.rewind_runs") == [(1,)]


def test_a_batch_that_meets_a_node_a_rewind_stored_meanwhile_is_written_again(store: Store) -> None:
    frame = IndexedFrame(1, 0, 0, "root/agent:a:0", 1, 2, (1, 2), KEY, "completed", None)
    writer = BatchWriter(store, "t" * 32, build=1)
    done: list[BaseException | None] = []

    def write() -> None:
        try:
            writer(Batch(frames=[frame], nodes={KEY: NODE}, counts={KEY: COUNTS}))
            done.append(None)
        except BaseException as exc:  # handed to the test
            done.append(exc)

    with store.transaction() as conn:  # a rewind storing the same node, committed while the batch waits
        store_node(conn, '{"callId": "root/agent:a:0", "children": {}}')
        thread = threading.Thread(target=write)
        thread.start()
        time.sleep(1.0)  # the batch's inserts are in; its commit waits for this transaction
    thread.join(30)
    assert done == [None]
    assert store.query("SELECT count(*) FROM rewind.snapshot_nodes WHERE node_id = ?", [KEY]) == [(1,)]
    assert store.query("SELECT frame, node_id FROM rewind.rewind_frames") == [(1, KEY)]
    assert writer.frames == 1


def test_the_index_checkpoints_its_file_once_its_batches_have_grown_the_wal_and_not_before(store: Store) -> None:
    """What the index committed waits in memory until a checkpoint: the writer makes one once the
    rewind file's WAL holds `CHECKPOINT_WAL`, well before the store's threshold would
    (`database.CHECKPOINT_THRESHOLD`). The events' file is neither written nor checkpointed by it:
    its commits do not wait for the index's checkpoints."""
    with store.transaction(derives=False) as conn:
        conn.execute("CREATE TABLE scratch AS SELECT 1 AS x")
    events_wal = store.wal_bytes()
    assert events_wal > 0
    writer = BatchWriter(store, "t" * 32, build=1)
    nodes = {}
    for n in range(200):
        node = {"callId": f"root/agent:a:{n}", "children": {}, "memory": {"text": f"{n}" * 30_000}}
        nodes[node_id(node)] = node
    small = dict(list(nodes.items())[:1])
    writer(Batch(nodes=small, counts=dict.fromkeys(small, COUNTS)))
    assert 0 < store.wal_bytes(rewind=True) < CHECKPOINT_WAL  # one small batch: no checkpoint yet
    writer(Batch(nodes=nodes, counts=dict.fromkeys(nodes, COUNTS)))  # ~6 MB: past the threshold
    assert store.wal_bytes(rewind=True) == 0
    assert store.wal_bytes() == events_wal
    assert store.query("SELECT count(*) FROM rewind.snapshot_nodes") == [(200,)]
