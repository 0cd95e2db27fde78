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

A frame of more than `FANOUT` children keeps their references in *chunk* nodes, so that what a
rewind writes does not grow with the frames that had ended: its `children` is a list of chunk ids,
and a chunk of level 0 holds `FANOUT` consecutive children (`{"chunk": 0, "children": {callId: id}}`),
one of level L `FANOUT` chunks of level L - 1 (`{"chunk": L, "chunks": [id, ...]}`), the last of each
level holding the rest; the frame lists the chunks of the lowest level that fits in `FANOUT` ids.
The layout is a function of the number of children alone, so an orchestrator's chunks of agents that
had all ended are the same nodes at every later cut, and a rewind makes only the chunks that hold an
open frame or the newest children (`child_refs`). A frame of `FANOUT` children or fewer is as before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, NamedTuple, cast

from devtool.core.jsonvalue import JSON, content_hash_of_json

Node = dict[str, Any]

FANOUT: Final = 64


def node_id(node: Mapping[str, Any]) -> str:
    """The id of a node, or of a snapshot's top: SHA-256 (hex) of its canonical JSON.

    The value must be JSON already (a snapshot checked by `validate`, or made by restore from parsed
    events): this is the hash `content_hash` computes, without checking the value again.
    """
    return content_hash_of_json(cast(JSON, node))


def split(snapshot: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Node]]:
    """The snapshot's top, and the node of each of its frames (and chunks) by id (every child before
    its parent)."""
    nodes: dict[str, Node] = {}

    def add(frame: Mapping[str, Any]) -> str:
        entries = [(call_id, add(child)) for call_id, child in frame["children"].items()]
        node = {**frame, "children": child_refs(len(entries), entries.__getitem__, {}, nodes)}
        key = node_id(node)
        nodes[key] = node
        return key

    return {**snapshot, "root": add(snapshot["root"])}, nodes


def child_refs(
    count: int,
    entry: Callable[[int], tuple[str, str]],
    known: Mapping[tuple[int, int], str],
    nodes: dict[str, Node],
) -> dict[str, str] | list[str]:
    """A frame node's `children` for `count` children: `{callId: node id}` up to `FANOUT`, else the ids
    of its chunks (see the module docstring). `entry(i)` is child i as `(callId, node id)`;
    `known[(level, position)]` is the id of a chunk made before (its children are not asked for);
    the chunks made here are added to `nodes`."""
    if count <= FANOUT:
        return dict(entry(index) for index in range(count))

    def chunk(level: int, position: int) -> str:
        key = known.get((level, position))
        if key is not None:
            return key
        first = position * FANOUT ** (level + 1)
        end = min(first + FANOUT ** (level + 1), count)
        node: Node
        if level == 0:
            node = {"chunk": 0, "children": dict(entry(index) for index in range(first, end))}
        else:
            below = FANOUT**level
            node = {"chunk": level, "chunks": [chunk(level - 1, p) for p in range(first // below, -(-end // below))]}
        key = node_id(node)
        nodes[key] = node
        return key

    level = top_level(count)
    return [chunk(level, position) for position in range(-(-count // FANOUT ** (level + 1)))]


def top_level(count: int) -> int:
    """The level of the chunks a frame of `count` (> FANOUT) children lists: the lowest that fits."""
    level = 0
    while -(-count // FANOUT ** (level + 1)) > FANOUT:
        level += 1
    return level


def referenced(node: Mapping[str, Any]) -> list[str]:
    """The ids a frame or chunk node points at: its children's, or its chunks'."""
    children = node.get("children")
    if isinstance(children, dict):
        return list(children.values())
    return list(children if isinstance(children, list) else node["chunks"])


def is_chunk(node: Mapping[str, Any]) -> bool:
    """Whether a node holds children's references for a frame, rather than being a frame itself."""
    return "chunk" in node and "callId" not in node


def child_ids(node: Mapping[str, Any], nodes: Mapping[str, Node]) -> dict[str, str]:
    """A frame node's children as `{callId: node id}`, through its chunks (taken from `nodes`)."""
    children = node["children"]
    if isinstance(children, dict):
        return dict(children)
    found: dict[str, str] = {}
    stack = list(reversed(children))
    while stack:
        chunk = nodes[stack.pop()]
        if "children" in chunk:
            found.update(chunk["children"])
        else:
            stack.extend(reversed(chunk["chunks"]))
    return found


def snapshot_id(snapshot: Mapping[str, Any]) -> str:
    """The id a snapshot is known by: the id of its top (see the module docstring)."""
    top, _ = split(snapshot)
    return node_id(top)


def assemble(top: Mapping[str, Any], nodes: Mapping[str, Node]) -> dict[str, Any]:
    """The whole snapshot document from its top and its nodes (`KeyError` for a node not given)."""

    def frame(key: str) -> dict[str, Any]:
        node = nodes[key]
        return {**node, "children": {call_id: frame(child) for call_id, child in child_ids(node, nodes).items()}}

    return {**top, "root": frame(top["root"])}


class NodeCounts(NamedTuple):
    """What a node's subtree holds: frames, prompt and tool journal entries, tombstones among them."""

    frames: int
    prompts: int
    tools: int
    tombstones: int


def subtree_counts(node: Mapping[str, Any], children: Iterable[NodeCounts]) -> NodeCounts:
    """A node's counts: its own (a chunk is no frame and has no journal) and its children's."""
    journal = node.get("journal", {})
    prompt, tool = journal.get("prompt", {}), journal.get("tool", {})
    totals = [
        0 if is_chunk(node) else 1,
        len(prompt),
        len(tool),
        sum(map(is_tombstone, prompt.values())) + sum(map(is_tombstone, tool.values())),
    ]
    for counted in children:
        totals = [total + value for total, value in zip(totals, counted, strict=True)]
    return NodeCounts(*totals)


def is_tombstone(entry: Mapping[str, Any]) -> bool:
    """A journal entry a replay never serves (an output that was not JSON): `output` null, `error` set."""
    return entry.get("output") is None and entry.get("error") is not None
