"""Snapshots under a stable content id, with the snapshot they were forked from."""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

import pytest

from devtool.core.debugger import restore_snapshot
from devtool.core.jsonvalue import canonical_json
from devtool.core.snapshot_tree import FANOUT, split
from devtool.core.snapshot_tree import snapshot_id as tree_id
from devtool.store import NotFoundError, Store, StoreError, get_snapshot, list_snapshots, save_snapshot
from devtool.store.snapshots import ChildIds, frame_page, snapshot_counts
from tests.conftest import CORPUS


def restored(scenario: str = "nested") -> dict[str, object]:
    path = CORPUS / "rejelly" / f"{scenario}.trace.jsonl"
    return dict(restore_snapshot([json.loads(line) for line in path.read_text().splitlines()]))


def depth_first(snapshot: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    """The snapshot's frames with their depths, in the order its page lists them."""
    frames = []
    stack = [(0, snapshot["root"])]
    while stack:
        depth, frame = stack.pop()
        frames.append((depth, frame))
        stack.extend((depth + 1, child) for child in reversed(list(frame["children"].values())))
    return frames


def test_the_id_is_the_hash_of_the_content_tree_and_saving_twice_keeps_one(store: Store) -> None:
    snapshot = restored()
    first = save_snapshot(store, snapshot)
    again = save_snapshot(store, copy.deepcopy(snapshot))
    assert first == again == tree_id(snapshot)
    assert len(first) == 64
    assert store.query("SELECT count(*) FROM rewind.snapshots") == [(1,)]
    stored = get_snapshot(store, first)
    assert stored.snapshot == snapshot
    assert (stored.info.trace_id, stored.info.source, stored.info.parent_id) == (
        "dfc19ffa56c7ceafc8c61ea1cd2faea9",
        "restore",
        None,
    )


def test_the_document_keeps_its_key_order_and_the_first_creator(store: Store) -> None:
    # A replay hands outputs back as recorded; an agent that writes one into its next prompt writes
    # its keys in that order, so a sorted copy would change the prompt's hash and miss the journal.
    snapshot = restored()
    snapshot["root"]["memory"] = {"zebra": 1, "apple": {"y": 2, "b": 3}}  # type: ignore[index]
    snapshot_id = save_snapshot(store, snapshot, created_by="ana")
    top, _ = split(snapshot)
    assert snapshot_id == hashlib.sha256(canonical_json(top)).hexdigest()
    memory = get_snapshot(store, snapshot_id).snapshot["root"]["memory"]
    assert list(memory) == ["zebra", "apple"]
    assert list(memory["apple"]) == ["y", "b"]
    assert save_snapshot(store, copy.deepcopy(snapshot), created_by="bo") == snapshot_id
    assert get_snapshot(store, snapshot_id).info.created_by == "ana"


def test_a_trusted_restore_is_stored_under_the_same_id_as_a_checked_one(store: Store) -> None:
    snapshot = restored("zombie")
    trusted = save_snapshot(store, snapshot, trusted=True)
    assert trusted == tree_id(snapshot)
    assert get_snapshot(store, trusted).snapshot == snapshot
    assert save_snapshot(store, copy.deepcopy(snapshot)) == trusted


def test_a_value_that_is_not_json_is_refused(store: Store) -> None:
    snapshot = restored()
    snapshot["root"]["memory"] = {"ratio": float("nan")}  # type: ignore[index]
    with pytest.raises(StoreError, match=r"not an AgentSnapshot: \$\.root\.memory\.ratio is nan"):
        save_snapshot(store, snapshot)


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
    deep = restored()
    for depth in range(5000):
        deep["root"] = {**deep["root"], "callId": f"c{depth}", "children": {deep["root"]["callId"]: deep["root"]}}
    with pytest.raises(StoreError, match="not an AgentSnapshot: its frames are nested too deep to be stored"):
        save_snapshot(store, deep)
    assert store.query("SELECT count(*) FROM rewind.snapshots") == [(0,)]


def test_a_page_of_frames_reads_the_tree_in_depth_first_order(store: Store) -> None:
    snapshot = restored("nested")
    stored = get_snapshot(store, save_snapshot(store, snapshot))
    frames = depth_first(snapshot)
    assert len(frames) > 4
    assert snapshot_counts(store, stored).frames == len(frames)
    for offset in range(len(frames) + 1):
        for limit in (1, 2, 3, 100):
            page = frame_page(store, stored, offset=offset, limit=limit)
            expected = frames[offset : offset + limit]
            assert [position for position, _, _ in page] == list(range(offset, offset + len(expected)))
            assert [(depth, node["callId"], list(node["children"])) for _, depth, node in page] == [
                (depth, frame["callId"], list(frame["children"])) for depth, frame in expected
            ]
            pairs = zip(page, expected, strict=True)
            assert all(node["memory"] == frame["memory"] for (_, _, node), (_, frame) in pairs)


def test_a_snapshot_stored_whole_before_trees_is_read_as_one(store: Store) -> None:
    # A row from before migration 3: the whole document under the hash of its canonical JSON.
    snapshot = restored("zombie")
    legacy_id = hashlib.sha256(canonical_json(snapshot)).hexdigest()
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO rewind.snapshots (snapshot_id, trace_id, source, body) VALUES (?, ?, 'restore', ?)",
            [legacy_id, snapshot["provenance"]["traceId"], json.dumps(snapshot)],
        )
    stored = get_snapshot(store, legacy_id)
    assert stored.info.snapshot_id == legacy_id
    assert stored.snapshot == snapshot
    assert snapshot_counts(store, stored).frames == len(frame_page(store, stored, offset=0, limit=1000))
    assert store.query("SELECT root_id IS NOT NULL FROM rewind.snapshots") == [(True,)]
    assert get_snapshot(store, legacy_id).snapshot == snapshot


def wide_snapshot(children: int) -> dict[str, Any]:
    """The nested corpus run with `children` more agents under its root, one of them with a child."""
    snapshot = restored("nested")
    template = next(iter(snapshot["root"]["children"].values()))
    extra = {}
    for n in range(children):
        call_id = f"root/agent:extra:{n}"
        extra[call_id] = {**copy.deepcopy(template), "callId": call_id, "memory": {"n": n}, "children": {}}
    extra["root/agent:extra:100"]["children"] = {"inner": {**copy.deepcopy(template), "callId": "inner"}}
    snapshot["root"]["children"].update(extra)
    return snapshot


def test_a_frame_of_thousands_of_children_is_stored_in_chunks_and_paged_through_them(store: Store) -> None:
    snapshot = wide_snapshot(FANOUT * FANOUT + 70)  # two levels of chunks
    stored = get_snapshot(store, save_snapshot(store, snapshot))
    assert stored.info.snapshot_id == tree_id(snapshot)
    assert stored.snapshot == snapshot
    assert store.query("SELECT count(*) FROM rewind.snapshot_nodes WHERE (body->>'chunk') IS NOT NULL")[0][0] > FANOUT
    frames = depth_first(snapshot)
    assert snapshot_counts(store, stored).frames == len(frames)
    for offset in (0, 1, 5, 100, 101, 102, FANOUT * 40 + 3, len(frames) - 2):
        page = frame_page(store, stored, offset=offset, limit=30)
        expected = frames[offset : offset + 30]
        assert [(depth, node["callId"]) for _, depth, node in page] == [(d, f["callId"]) for d, f in expected]
        assert [len(node["children"]) for _, _, node in page] == [len(f["children"]) for _, f in expected]
    root = frame_page(store, stored, offset=0, limit=1)[0][2]
    assert isinstance(root["children"], ChildIds)
    assert list(root["children"]) == list(snapshot["root"]["children"])
