"""Snapshot ids, and a snapshot as a tree of frames each kept under its own content id (a Merkle tree).

A frame's *node* is the frame with its `children` replaced by their node ids (`{callId: id}`, in the
children's order); the node's id is the SHA-256 of its canonical JSON, so it covers the frame's whole
subtree. A snapshot's *top* is the document with `root` replaced by the root's node id, and the
snapshot's id is the SHA-256 of the top's canonical JSON: it changes when anything in the snapshot
does, and it is the same whoever computes it (a rewind, an upload, a fork, `dump_snapshot`).

Why a tree: the snapshots of a big run share most of their frames (every agent that had ended by the
cut), so each such frame is one node, hashed and stored once, and a rewind makes only the nodes of
the frames its cut leaves open. The document a replay takes is `assemble(top, nodes)`; key order is
kept everywhere (recorded outputs are handed back as they were), only the hashing sorts keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from devtool.core.jsonvalue import JSON, content_hash_of_json

Node = dict[str, Any]


def node_id(node: Mapping[str, Any]) -> str:
    """The id of a node, or of a snapshot's top: SHA-256 (hex) of its canonical JSON.

    The value must be JSON already (a snapshot checked by `validate`, or made by restore from parsed
    events): this is the hash `content_hash` computes, without checking the value again.
    """
    return content_hash_of_json(cast(JSON, node))


def split(snapshot: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Node]]:
    """The snapshot's top, and the node of each of its frames by id (every child before its parent)."""
    nodes: dict[str, Node] = {}

    def add(frame: Mapping[str, Any]) -> str:
        children = {call_id: add(child) for call_id, child in frame["children"].items()}
        node = {**frame, "children": children}
        key = node_id(node)
        nodes[key] = node
        return key

    return {**snapshot, "root": add(snapshot["root"])}, nodes


def snapshot_id(snapshot: Mapping[str, Any]) -> str:
    """The id a snapshot is known by: the id of its top (see the module docstring)."""
    top, _ = split(snapshot)
    return node_id(top)


def assemble(top: Mapping[str, Any], nodes: Mapping[str, Node]) -> dict[str, Any]:
    """The whole snapshot document from its top and its nodes (`KeyError` for a node not given)."""

    def frame(key: str) -> dict[str, Any]:
        node = nodes[key]
        return {**node, "children": {call_id: frame(child) for call_id, child in node["children"].items()}}

    return {**top, "root": frame(top["root"])}
