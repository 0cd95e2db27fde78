"""A run or a snapshot this DevTool lacks, looked up in the team's lake and copied in once (with a lake
attached: `devtool serve --lake`), so the page that asked for it is then a local page."""

from __future__ import annotations

from starlette.exceptions import HTTPException

from devtool.store import Store
from devtool.store.lake import LakeError, open_run, open_snapshot


def run_from_lake(store: Store, trace_id: str) -> bool:
    """Whether run `trace_id` was found in the lake and is now in the store (503 when the lake fails)."""
    lake = store.lake
    if lake is None:
        return False
    try:
        return open_run(store, lake, trace_id) is not None
    except LakeError as exc:
        raise HTTPException(503, f"run {trace_id} is in the team's lake, but it cannot be read now: {exc}") from None


def snapshot_from_lake(store: Store, snapshot_id: str) -> bool:
    """Whether snapshot `snapshot_id` was found in the lake and is now in the store."""
    if store.lake is None:
        return False
    try:
        return open_snapshot(store, snapshot_id)
    except LakeError as exc:
        raise HTTPException(503, f"snapshot {snapshot_id} cannot be read from the team's lake now: {exc}") from None
