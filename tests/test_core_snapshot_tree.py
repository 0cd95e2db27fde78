"""Snapshot ids and snapshots as trees of frame nodes (`devtool.core.snapshot_tree`)."""

from __future__ import annotations

import copy
import hashlib
import json

from devtool.core.debugger import restore_snapshot
from devtool.core.jsonvalue import canonical_json
from devtool.core.snapshot_tree import assemble, node_id, snapshot_id, split
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
