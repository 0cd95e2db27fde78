"""AgentSnapshots kept in the store, each under a stable content id, with the snapshot it was forked from.

A snapshot is kept as a tree of frame nodes (`devtool.core.snapshot_tree`): its top in `snapshots`,
one row per frame in `snapshot_nodes`, shared by every snapshot holding that frame (the snapshots of
one run share most of theirs; a fork shares all the frames it did not edit). Its id is the hash of
its top, which covers every node: the same snapshot saved twice is stored once and keeps its id, so
a `/snapshots/<id>` link means the same document forever. Documents keep their own key order, not the
canonical one: a replay hands recorded outputs back as they were, and an agent that writes a tool's
output into its next prompt writes the keys in that order, so sorting them would change the prompt's
hash and miss the journal. A fork records `parent_id`; `created_by` is who stored it first.

Each node row also counts its subtree (frames, journal entries, tombstones), so a snapshot page
shows a big snapshot's totals and one page of its frames without reading the rest
(`snapshot_counts`, `frame_page`); the whole document is assembled only when asked for
(`StoredSnapshot.snapshot`: a download, a replay, a fork).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import Any, cast

import duckdb
import orjson

from devtool.core.errors import SnapshotError
from devtool.core.jsonvalue import NotJSONError, json_copy
from devtool.core.snapshot import AgentSnapshot, validate
from devtool.core.snapshot_tree import (
    FANOUT,
    Node,
    NodeCounts,
    assemble,
    node_id,
    referenced,
    split,
    subtree_counts,
)
from devtool.store import list_param
from devtool.store.collector import collector_paused
from devtool.store.database import Store
from devtool.store.errors import NotFoundError, StoreError
from devtool.store.id_lists import rows_by_key

# Nodes read or written per statement (an id list bound as one parameter).
_BATCH = 50_000


@dataclass(frozen=True, slots=True)
class SnapshotInfo:
    """What the store knows of a snapshot, without the document."""

    snapshot_id: str
    parent_id: str | None
    trace_id: str | None
    span_id: str | None
    anchor: str | None
    source: str | None
    created_at: datetime
    created_by: str | None = None


@dataclass(frozen=True, slots=True)
class SnapshotCounts:
    """A snapshot's (or a subtree's) frames, prompt and tool journal entries, and tombstones."""

    frames: int
    prompts: int
    tools: int
    tombstones: int


class StoredSnapshot:
    """A stored snapshot: its info, its top (the document without its frames), and, read when first
    used, the whole document."""

    def __init__(self, store: Store, info: SnapshotInfo, top: dict[str, Any]) -> None:
        self.info = info
        self.top = top
        self._store = store

    @property
    def root_id(self) -> str:
        return str(self.top["root"])

    @cached_property
    def snapshot(self) -> AgentSnapshot:
        with collector_paused():
            return cast(AgentSnapshot, assemble(self.top, read_nodes(self._store, [self.root_id])))


def snapshot_id(snapshot: AgentSnapshot | dict[str, Any]) -> str:
    """The id `snapshot` is stored under (`devtool.core.snapshot_tree.snapshot_id`), once checked."""
    top, _ = _split(snapshot, trusted=False)
    return node_id(top)


def save_snapshot(
    store: Store,
    snapshot: AgentSnapshot | dict[str, Any],
    *,
    parent_id: str | None = None,
    created_by: str | None = None,
    trusted: bool = False,
) -> str:
    """Store `snapshot` (checked to be an AgentSnapshot of JSON values) and return its id; saving it
    again changes nothing (the first `created_by` stays).

    `trusted`: the snapshot comes straight from `restore_snapshot` over parsed JSON events, so it is
    well-formed JSON by construction and is not checked again (on a million-event run the checks
    cost more than the restore). Never pass it for a snapshot from a user or a file.
    """
    top, nodes = _split(snapshot, trusted=trusted)
    return save_tree(store, top, nodes, parent_id=parent_id, created_by=created_by)


def save_tree(
    store: Store,
    top: Mapping[str, Any],
    nodes: Mapping[str, Node],
    *,
    parent_id: str | None = None,
    created_by: str | None = None,
) -> str:
    """Store a snapshot given as its top and the nodes it adds (children before parents; a child
    not among them must be stored already), return its id."""
    new_id = node_id(top)
    provenance = top["provenance"]
    with collector_paused(), store.transaction() as conn:
        if (
            parent_id is not None
            and not conn.execute("SELECT 1 FROM rewind.snapshots WHERE snapshot_id = ?", [parent_id]).fetchall()
        ):
            raise NotFoundError(f"no snapshot {parent_id!r} to fork from")
        if not conn.execute("SELECT 1 FROM rewind.snapshots WHERE snapshot_id = ?", [new_id]).fetchall():
            write_nodes(conn, nodes)
            conn.execute(
                "INSERT INTO rewind.snapshots (snapshot_id, parent_id, trace_id, span_id, anchor, source, body, "
                "created_by, root_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                [
                    new_id,
                    parent_id,
                    provenance.get("traceId"),
                    provenance.get("spanId"),
                    provenance.get("anchor"),
                    provenance.get("source"),
                    orjson.dumps(top).decode(),
                    created_by,
                    top["root"],
                ],
            )
    return new_id


def write_nodes(
    conn: duckdb.DuckDBPyConnection, nodes: Mapping[str, Node], counts: Mapping[str, NodeCounts] | None = None
) -> None:
    """Insert `nodes` (children before parents) with their subtrees' counts (given, or added up here:
    those of the stored children they point at are read in one statement), inside the caller's
    transaction; nodes stored already are kept as they are."""
    if counts is None:
        counts = _counts(conn, nodes)
    rows = [(key, orjson.dumps(node).decode(), counts[key]) for key, node in nodes.items()]
    for start in range(0, len(rows), _BATCH):
        batch = rows[start : start + _BATCH]
        conn.execute(
            f"""
            INSERT INTO rewind.snapshot_nodes
            SELECT unnest({list_param.of("ids")}), unnest({list_param.of("bodies")})::JSON,
                   unnest({list_param.of("frames", "BIGINT")}), unnest({list_param.of("prompts", "BIGINT")}),
                   unnest({list_param.of("tools", "BIGINT")}), unnest({list_param.of("tombstones", "BIGINT")})
            ON CONFLICT DO NOTHING
            """,
            {
                "ids": list_param.values(row[0] for row in batch),
                "bodies": list_param.values(row[1] for row in batch),
                "frames": list_param.values(row[2].frames for row in batch),
                "prompts": list_param.values(row[2].prompts for row in batch),
                "tools": list_param.values(row[2].tools for row in batch),
                "tombstones": list_param.values(row[2].tombstones for row in batch),
            },
        )


def get_snapshot(store: Store, snapshot_id: str) -> StoredSnapshot:
    """The snapshot stored under `snapshot_id`; `NotFoundError` when there is none."""
    rows = store.query(f"SELECT {_INFO}, body, root_id FROM rewind.snapshots WHERE snapshot_id = ?", [snapshot_id])
    if not rows:
        raise NotFoundError(f"no snapshot {snapshot_id!r} in the store")
    *info, body, root_id = rows[0]
    with collector_paused():
        document = orjson.loads(body)
        if root_id is None:
            document = _as_tree(store, snapshot_id, document)
    return StoredSnapshot(store, SnapshotInfo(*info), document)


def list_snapshots(store: Store, *, trace_id: str | None = None) -> list[SnapshotInfo]:
    """Stored snapshots (of one run, or all), newest first."""
    where = "WHERE trace_id = ?" if trace_id is not None else ""
    rows = store.query(
        f"SELECT {_INFO} FROM rewind.snapshots {where} ORDER BY created_at DESC, snapshot_id",
        [trace_id] if trace_id is not None else [],
    )
    return [SnapshotInfo(*row) for row in rows]


def read_nodes(store: Store, ids: Iterable[str]) -> dict[str, Node]:
    """The nodes `ids` and every node under them, by id."""
    nodes: dict[str, Node] = {}
    wanted = list(ids)
    with store.reader() as cursor:
        while wanted:
            batch = list(dict.fromkeys(key for key in wanted[:_BATCH] if key not in nodes))
            wanted = wanted[_BATCH:]
            if not batch:
                continue
            rows = cursor.execute(
                "SELECT node_id, body FROM rewind.snapshot_nodes WHERE node_id = ANY($ids)", {"ids": batch}
            ).fetchall()
            if len(rows) != len(batch):
                raise StoreError(f"{len(batch) - len(rows)} frames of a stored snapshot are missing from the store")
            for key, body in rows:
                node = nodes[key] = orjson.loads(body)
                wanted.extend(child for child in referenced(node) if child not in nodes)
    return nodes


def snapshot_counts(store: Store, stored: StoredSnapshot) -> SnapshotCounts:
    """The snapshot's totals: frames, prompt and tool entries, tombstones."""
    rows = store.query(
        "SELECT frames, prompts, tools, tombstones FROM rewind.snapshot_nodes WHERE node_id = ?", [stored.root_id]
    )
    if not rows:
        raise StoreError(f"the root frame of snapshot {stored.info.snapshot_id} is missing from the store")
    return SnapshotCounts(*rows[0])


def frame_page(store: Store, stored: StoredSnapshot, *, offset: int, limit: int) -> list[tuple[int, int, Node]]:
    """Frames `offset` .. `offset + limit` of the snapshot in depth-first order (children in their
    order), each as (position, depth, node): a node's `children` are node ids (`ChildIds` for a frame
    whose children are in chunks). Reads the nodes on the page and the subtrees' sizes it skips by,
    a node's children (or chunks) in one statement with their sizes, nothing else."""
    page: list[tuple[int, int, Node]] = []
    with collector_paused(), store.reader() as cursor:
        read = _sized(cursor, [stored.root_id])
        # Depth-first with a stack of (node id, depth, whether it is a chunk); `position` counts
        # frames passed (a chunk is no frame: its children are its frame's).
        stack = [(stored.root_id, 0, False)]
        position = 0
        while stack and len(page) < limit:
            key, depth, chunk = stack.pop()
            body, size = read[key]
            if position + size <= offset:
                position += size  # the whole subtree is before the page
                continue
            node: Node = orjson.loads(body)
            if not chunk:
                if position >= offset:
                    children = node["children"]
                    shown = node if isinstance(children, dict) else {**node, "children": ChildIds(store, children)}
                    page.append((position, depth, shown))
                position += 1
            refs = referenced(node)
            missing = [ref for ref in refs if ref not in read]
            if missing:
                read.update(_sized(cursor, missing))
            into_chunks = "chunks" in node if chunk else isinstance(node["children"], list)
            below = depth if chunk else depth + 1
            stack.extend((child, below, into_chunks) for child in reversed(refs))
    return page


class ChildIds(Mapping[str, str]):
    """A frame's children kept in chunks, as `{callId: node id}`, read from the store only as far as
    asked: their number from the last chunk of each level, the entries when iterated."""

    def __init__(self, store: Store, chunks: list[str]) -> None:
        self._store = store
        self._chunks = chunks
        self._count: int | None = None
        self._entries: dict[str, str] | None = None

    def __len__(self) -> int:
        if self._count is None:
            count, ids = 0, self._chunks
            with collector_paused(), self._store.reader() as cursor:
                while True:
                    last = _bodies(cursor, [ids[-1]])[ids[-1]]
                    count += (len(ids) - 1) * FANOUT ** (last["chunk"] + 1)
                    if "children" in last:
                        count += len(last["children"])
                        break
                    ids = last["chunks"]
            self._count = count
        return self._count

    def __iter__(self) -> Iterator[str]:
        return iter(self._read())

    def __getitem__(self, call_id: str) -> str:
        return self._read()[call_id]

    def _read(self) -> dict[str, str]:
        if self._entries is None:
            chunks: dict[str, Node] = {}
            with collector_paused(), self._store.reader() as cursor:
                wanted = self._chunks
                while wanted:  # a level of chunks at a time
                    found = _bodies(cursor, wanted)
                    if len(found) != len(set(wanted)):
                        raise StoreError("chunks of a stored snapshot are missing from the store")
                    chunks.update(found)
                    wanted = [key for chunk in wanted for key in found[chunk].get("chunks", [])]
            self._entries = {}
            stack = list(reversed(self._chunks))
            while stack:
                chunk = chunks[stack.pop()]
                if "children" in chunk:
                    self._entries.update(chunk["children"])
                else:
                    stack.extend(reversed(chunk["chunks"]))
        return self._entries


def _split(snapshot: Any, *, trusted: bool) -> tuple[dict[str, Any], dict[str, Node]]:
    try:
        return split(snapshot if trusted else _checked(snapshot))
    except RecursionError:
        raise StoreError("not an AgentSnapshot: its frames are nested too deep to be stored") from None


def _checked(snapshot: Any) -> AgentSnapshot:
    try:
        checked = validate(snapshot)
        json_copy(checked)
    except (SnapshotError, NotJSONError) as exc:
        raise StoreError(f"not an AgentSnapshot: {exc}") from exc
    return checked


def _counts(conn: duckdb.DuckDBPyConnection, nodes: Mapping[str, Node]) -> dict[str, NodeCounts]:
    """The counts of each of `nodes` (children before parents), the stored children's read at once."""
    stored = list({child for node in nodes.values() for child in referenced(node) if child not in nodes})
    counts: dict[str, NodeCounts] = {}
    if stored:
        rows = rows_by_key(
            conn,
            "SELECT node_id, frames, prompts, tools, tombstones FROM rewind.snapshot_nodes WHERE node_id IN ({ids})",
            stored,
        )
        if len(rows) != len(stored):
            raise StoreError(f"cannot store the snapshot: {len(stored) - len(rows)} of its frames are not in the store")
        counts.update((key, NodeCounts(*rest)) for key, *rest in rows)
    for key, node in nodes.items():
        counts[key] = subtree_counts(node, (counts[child] for child in referenced(node)))
    return counts


def _sized(cursor: duckdb.DuckDBPyConnection, ids: list[str]) -> dict[str, tuple[str, int]]:
    """The nodes `ids` as (body, unparsed; frames in its subtree)."""
    rows = rows_by_key(cursor, "SELECT node_id, body, frames FROM rewind.snapshot_nodes WHERE node_id IN ({ids})", ids)
    found = {key: (body, frames) for key, body, frames in rows}
    if len(found) != len(set(ids)):
        raise StoreError("frames of a stored snapshot are missing from the store")
    return found


def _bodies(cursor: duckdb.DuckDBPyConnection, ids: list[str]) -> dict[str, Node]:
    rows = rows_by_key(cursor, "SELECT node_id, body FROM rewind.snapshot_nodes WHERE node_id IN ({ids})", ids)
    nodes = {key: orjson.loads(body) for key, body in rows}
    if ids[0] not in nodes:
        raise StoreError(f"frame {ids[0]} of a stored snapshot is missing from the store")
    return nodes


def _as_tree(store: Store, snapshot_id: str, document: dict[str, Any]) -> dict[str, Any]:
    """A snapshot stored whole (before snapshots were trees), stored as a tree under its id."""
    top, nodes = split(document)
    with store.transaction() as conn:
        write_nodes(conn, nodes)
        conn.execute(
            "UPDATE rewind.snapshots SET body = ?, root_id = ? WHERE snapshot_id = ?",
            [orjson.dumps(top).decode(), top["root"], snapshot_id],
        )
    return top


_INFO = "snapshot_id, parent_id, trace_id, span_id, anchor, source, created_at, created_by"
