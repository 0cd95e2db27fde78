"""`Store.memory_held`: DuckDB held to a lower limit for a block (a rewind index's build), then given
back the store's own, also when the block fails; a limit above the store's changes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from devtool.actions.frame_indexer import BUILD_MEMORY_LIMIT, build_index
from devtool.store import Store, append_events
from devtool.store.database import size_bytes
from tests.conftest import Trace


def limit(store: Store) -> str:
    return str(store.query("SELECT current_setting('memory_limit')")[0][0])


def fail_while_held(store: Store) -> None:
    with store.memory_held("256MiB"):
        assert limit(store) == "256.0 MiB"
        raise RuntimeError("the build failed")


def test_a_lower_limit_is_held_for_the_block_and_the_stores_own_given_back(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.duckdb", memory_limit="640MiB")
    try:
        assert limit(store) == "640.0 MiB"
        with store.memory_held("400MiB"):
            assert limit(store) == "400.0 MiB"
        assert limit(store) == "640.0 MiB"
        with pytest.raises(RuntimeError):
            fail_while_held(store)
        assert limit(store) == "640.0 MiB"
        with store.memory_held("2GiB"):  # never raised above the store's
            assert limit(store) == "640.0 MiB"
    finally:
        store.close()


def test_an_index_build_gives_the_stores_limit_back(tmp_path: Path) -> None:
    run = Trace()
    root = run.start("runWith", agentId="")
    agent = run.start("agent", root, agentId="a", callId="root/agent:a:0")
    run.end(agent, success=True, result=1)
    run.end(root, success=True, result=None)
    store = Store(tmp_path / "s.duckdb", memory_limit="1GiB")
    try:
        append_events(store, run.events)
        assert size_bytes(BUILD_MEMORY_LIMIT) < size_bytes("1GiB")
        assert build_index(store, run.trace_id).indexed
        assert limit(store) == "1.0 GiB"
    finally:
        store.close()


def test_sizes_are_read_as_duckdb_reads_them() -> None:
    assert size_bytes("640MiB") == 640 * 2**20
    assert size_bytes("1GB") == 10**9
    assert size_bytes("2.5 GiB") == int(2.5 * 2**30)
    with pytest.raises(ValueError, match="not a memory size: 'lots'"):
        size_bytes("lots")
