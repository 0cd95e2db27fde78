"""Snapshots under a stable content id, with the snapshot they were forked from."""

from __future__ import annotations

import copy
import json

import pytest

from devtool.core.debugger import restore_snapshot
from devtool.core.jsonvalue import content_hash
from devtool.store import NotFoundError, Store, StoreError, get_snapshot, list_snapshots, save_snapshot
from tests.conftest import CORPUS


def restored(scenario: str = "nested") -> dict[str, object]:
    path = CORPUS / "rejelly" / f"{scenario}.trace.jsonl"
    return dict(restore_snapshot([json.loads(line) for line in path.read_text().splitlines()]))


def test_the_id_is_the_hash_of_the_content_and_saving_twice_keeps_one(store: Store) -> None:
    snapshot = restored()
    first = save_snapshot(store, snapshot)
    again = save_snapshot(store, copy.deepcopy(snapshot))
    assert first == again == content_hash(snapshot)
    assert len(first) == 64
    assert store.query("SELECT count(*) FROM snapshots") == [(1,)]
    stored = get_snapshot(store, first)
    assert stored.snapshot == snapshot
    assert (stored.info.trace_id, stored.info.source, stored.info.parent_id) == (
        "dfc19ffa56c7ceafc8c61ea1cd2faea9",
        "restore",
        None,
    )


def test_a_fork_remembers_its_parent(store: Store) -> None:
    parent = restored()
    parent_id = save_snapshot(store, parent)
    fork = copy.deepcopy(parent)
    fork["root"]["memory"] = {"edited": True}  # type: ignore[index]
    fork_id = save_snapshot(store, fork, parent_id=parent_id)
    assert fork_id != parent_id
    assert get_snapshot(store, fork_id).info.parent_id == parent_id
    newest_first = [s.snapshot_id for s in list_snapshots(store, trace_id="dfc19ffa56c7ceafc8c61ea1cd2faea9")]
    assert newest_first == [fork_id, parent_id]
    assert list_snapshots(store, trace_id="another") == []


def test_what_cannot_be_saved(store: Store) -> None:
    with pytest.raises(StoreError, match=r"not an AgentSnapshot: snapshot\.version"):
        save_snapshot(store, {"root": {}})
    with pytest.raises(NotFoundError, match="no snapshot 'nope' to fork from"):
        save_snapshot(store, restored(), parent_id="nope")
    with pytest.raises(NotFoundError, match="no snapshot 'nope'"):
        get_snapshot(store, "nope")
    assert store.query("SELECT count(*) FROM snapshots") == [(0,)]
