"""Snapshot ids and snapshots as trees of frame nodes (`devtool.core.snapshot_tree`)."""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

from devtool.core.debugger import restore_snapshot
from devtool.core.jsonvalue import canonical_json
from devtool.core.snapshot_tree import (
    FANOUT,
    assemble,
    child_ids,
    child_refs,
    is_chunk,
    node_id,
    referenced,
    snapshot_id,
    split,
    top_level,
)
from tests.conftest import CORPUS


def nested() -> dict[str, object]:
    path = CORPUS / "rejelly" / "nested.trace.jsonl"
    return dict(restore_snapshot([json.loads(line) for line in path.read_text().splitlines()]))


def test_a_snapshot_splits_into_nodes_that_assemble_back_in_its_own_key_order() -> None:
    snapshot = nested()
    snapshot["root"]["memory"] = {"zebra": 1, "apple": {"y": 2, "b": 3}}  # type: ignore[index]
    top, nodes = split(snapshot)
    assert list(top) == list(snapshot)
    assert top["root"] in nodes
    assert len(nodes) > 3
    for key, node in nodes.items():  # each node is its frame, children by id, under its own hash
        assert key == hashlib.sha256(canonical_json(node)).hexdigest()
        assert all(child in nodes for child in node["children"].values())
    back = assemble(top, nodes)
    assert back == snapshot
    assert json.dumps(back) == json.dumps(snapshot)  # key order too


def test_the_id_is_the_hash_of_the_top_and_changes_with_any_frame() -> None:
    snapshot = nested()
    top, _ = split(snapshot)
    assert snapshot_id(snapshot) == node_id(top) == hashlib.sha256(canonical_json(top)).hexdigest()
    reordered = json.loads(json.dumps(snapshot, sort_keys=True))
    assert snapshot_id(reordered) == snapshot_id(snapshot)
    deep = copy.deepcopy(snapshot)
    leaf = deep["root"]
    path = 1
    while leaf["children"]:
        leaf = next(iter(leaf["children"].values()))
        path += 1
    leaf["memory"] = {"changed": True}
    assert snapshot_id(deep) != snapshot_id(snapshot)
    _, before = split(snapshot)
    _, after = split(deep)
    assert path > 1
    assert len(set(before) - set(after)) == path  # only the frames from the root to the edited one


def wide(children: int, *, edited: int | None = None) -> dict[str, Any]:
    """A snapshot whose root has `children` frames (child `edited`, if given, with other memory)."""

    def frame(call_id: str, memory: dict[str, Any], kids: dict[str, Any]) -> dict[str, Any]:
        state = {"status": "completed", "output": None}
        return {"callId": call_id, "agentId": "a", "memory": memory, "journal": {"prompt": {}, "tool": {}},
                "children": kids, "state": state}  # fmt: skip

    kids = {
        f"root/agent:w:{n}": frame(f"root/agent:w:{n}", {"n": n, "edited": n == edited}, {}) for n in range(children)
    }
    return {"processId": "p", "timestamp": 1, "root": frame("root", {}, kids), "provenance": {}, "version": 1}


def test_up_to_fanout_children_a_frame_holds_their_ids_itself() -> None:
    top, nodes = split(wide(FANOUT))
    root = nodes[top["root"]]
    assert isinstance(root["children"], dict)
    assert len(root["children"]) == FANOUT
    assert not any(is_chunk(node) for node in nodes.values())


def test_past_fanout_the_ids_go_into_chunks_that_assemble_back_in_order() -> None:
    for count, level, listed in ((FANOUT + 1, 0, 2), (FANOUT * FANOUT, 0, FANOUT), (FANOUT * FANOUT + 1, 1, 2)):
        snapshot = wide(count)
        top, nodes = split(snapshot)
        root = nodes[top["root"]]
        assert top_level(count) == level
        assert len(root["children"]) == listed
        assert all(nodes[key]["chunk"] == level for key in root["children"])
        chunks = [node for node in nodes.values() if is_chunk(node)]
        assert all(len(referenced(node)) <= FANOUT for node in chunks)
        assert list(child_ids(root, nodes)) == list(snapshot["root"]["children"])
        assert json.dumps(assemble(top, nodes)) == json.dumps(snapshot)
        for key, node in nodes.items():
            assert key == hashlib.sha256(canonical_json(node)).hexdigest()


def test_a_chunk_of_children_is_the_same_node_in_every_snapshot_that_holds_them() -> None:
    """What a rewind of a wide frame writes does not grow with its children: one changed child
    changes its own chunks and the frame, and a longer run shares every full chunk before."""
    _, nodes = split(wide(FANOUT * 40))
    _, edited = split(wide(FANOUT * 40, edited=FANOUT * 7 + 3))
    assert len(set(edited) - set(nodes)) == 3  # the child, its chunk, the root
    _, longer = split(wide(FANOUT * 40 + 5))
    full_chunks = {key for key, node in nodes.items() if is_chunk(node)}
    assert len(full_chunks) == 40
    assert full_chunks <= set(longer)


def test_chunks_made_before_are_taken_as_they_are() -> None:
    entries = [(f"c{n}", f"{n:064x}") for n in range(FANOUT * 3 + 7)]
    made: dict[str, Any] = {}
    whole = child_refs(len(entries), entries.__getitem__, {}, made)
    asked: list[int] = []

    def entry(index: int) -> tuple[str, str]:
        asked.append(index)
        return entries[index]

    again: dict[str, Any] = {}
    known = {(0, 0): whole[0], (0, 2): whole[2]}
    assert child_refs(len(entries), entry, known, again) == whole
    assert sorted(asked) == list(range(FANOUT, 2 * FANOUT)) + list(range(3 * FANOUT, len(entries)))
    assert set(again) == {whole[1], whole[3]}
