"""AgentSnapshots kept in the store, each under a stable content id, with the snapshot it was forked from.

The id is the SHA-256 of the snapshot's canonical JSON (`devtool.core`'s content hash): the same
snapshot saved twice is stored once and keeps its id, so a `/snapshots/<id>` link means the same
document forever. The document is stored with its own key order, not the canonical one: a replay
hands recorded outputs back as they were, and an agent that writes a tool's output into its next
prompt writes the keys in that order, so sorting them would change the prompt's hash and miss the
journal. A fork (a snapshot made by editing another) records `parent_id`; `created_by` is who stored
it first.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

import orjson

from devtool.core.errors import SnapshotError
from devtool.core.jsonvalue import NotJSONError, canonical_json, content_hash
from devtool.core.snapshot import AgentSnapshot, validate
from devtool.store.database import Store
from devtool.store.errors import NotFoundError, StoreError
from devtool.store.queries.events import collector_paused


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
class StoredSnapshot:
    info: SnapshotInfo
    snapshot: AgentSnapshot


def snapshot_id(snapshot: AgentSnapshot | dict[str, Any]) -> str:
    """The id a snapshot is stored under: the SHA-256 of its canonical JSON."""
    return content_hash(snapshot)


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
    if trusted:
        checked = cast(AgentSnapshot, snapshot)
        new_id = hashlib.sha256(orjson.dumps(checked, option=orjson.OPT_SORT_KEYS)).hexdigest()
    else:
        try:
            checked = validate(snapshot)
            new_id = hashlib.sha256(canonical_json(checked)).hexdigest()
        except (SnapshotError, NotJSONError) as exc:
            raise StoreError(f"not an AgentSnapshot: {exc}") from exc
    provenance = checked["provenance"]
    with store.transaction() as conn:
        if (
            parent_id is not None
            and not conn.execute("SELECT 1 FROM snapshots WHERE snapshot_id = ?", [parent_id]).fetchall()
        ):
            raise NotFoundError(f"no snapshot {parent_id!r} to fork from")
        conn.execute(
            "INSERT INTO snapshots (snapshot_id, parent_id, trace_id, span_id, anchor, source, body, created_by) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            [
                new_id,
                parent_id,
                provenance.get("traceId"),
                provenance.get("spanId"),
                provenance.get("anchor"),
                provenance.get("source"),
                orjson.dumps(checked).decode(),
                created_by,
            ],
        )
    return new_id


def get_snapshot(store: Store, snapshot_id: str) -> StoredSnapshot:
    """The snapshot stored under `snapshot_id`; `NotFoundError` when there is none."""
    rows = store.query(f"SELECT {_INFO}, body FROM snapshots WHERE snapshot_id = ?", [snapshot_id])
    if not rows:
        raise NotFoundError(f"no snapshot {snapshot_id!r} in the store")
    *info, body = rows[0]
    with collector_paused():
        return StoredSnapshot(SnapshotInfo(*info), orjson.loads(body))


def list_snapshots(store: Store, *, trace_id: str | None = None) -> list[SnapshotInfo]:
    """Stored snapshots (of one run, or all), newest first."""
    where = "WHERE trace_id = ?" if trace_id is not None else ""
    rows = store.query(
        f"SELECT {_INFO} FROM snapshots {where} ORDER BY created_at DESC, snapshot_id",
        [trace_id] if trace_id is not None else [],
    )
    return [SnapshotInfo(*row) for row in rows]


_INFO = "snapshot_id, parent_id, trace_id, span_id, anchor, source, created_at, created_by"
