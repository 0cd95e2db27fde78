"""A run or a snapshot this DevTool lacks, looked up in the team's lake and copied in (with a lake
attached: `devtool serve --lake`), so the page that asked for it is then a local page.

A run's page answers once the run's head is here (`store.lake.open_head`); the rest is copied after
the page is sent (`copy_rest`, a Starlette background task), and the page says how much is here
meanwhile (`Lake-Copied: <events here>/<events in the lake>`, and a note above the run). A link to a
span not here yet copies that span first (`span_from_lake`).
"""

from __future__ import annotations

from starlette.background import BackgroundTask
from starlette.exceptions import HTTPException
from starlette.responses import Response

from devtool.store import Store
from devtool.store.lake import LakeError, Opening, finish_open, open_head, open_snapshot, open_span, opening

COPIED_HEADER = "Lake-Copied"


def run_from_lake(store: Store, trace_id: str) -> bool:
    """Whether run `trace_id` was found in the lake and its head is now in the store (503 when the lake fails)."""
    lake = store.lake
    if lake is None:
        return False
    try:
        return open_head(store, lake, trace_id) is not None or bool(
            store.query("SELECT 1 FROM runs WHERE trace_id = ?", [trace_id])
        )
    except LakeError as exc:
        raise HTTPException(503, f"run {trace_id} is in the team's lake, but it cannot be read now: {exc}") from None


def copying(store: Store, trace_id: str) -> Opening | None:
    """How much of run `trace_id` is here while it is copied from the lake (None: all of it, or not a lake run)."""
    return None if store.lake is None else opening(store, trace_id)


def span_from_lake(store: Store, trace_id: str, span_id: str | None) -> None:
    """While run `trace_id` is copied from the lake, copy span `span_id` (and its ancestors) if not here yet."""
    lake = store.lake
    if lake is None or span_id is None:
        return
    try:
        open_span(store, lake, trace_id, span_id)
    except LakeError as exc:
        raise HTTPException(
            503, f"span {span_id} of run {trace_id} cannot be read from the team's lake now: {exc}"
        ) from None


def copy_rest(response: Response, store: Store, copied: Opening) -> None:
    """Say on `response` how much of the run is here, and copy the rest once it is sent."""
    response.headers[COPIED_HEADER] = f"{copied.local}/{copied.total}"
    lake = store.lake
    if lake is not None:
        response.background = BackgroundTask(finish_open, store, lake, copied.trace_id)


def snapshot_from_lake(store: Store, snapshot_id: str) -> bool:
    """Whether snapshot `snapshot_id` was found in the lake and is now in the store."""
    if store.lake is None:
        return False
    try:
        return open_snapshot(store, snapshot_id)
    except LakeError as exc:
        raise HTTPException(503, f"snapshot {snapshot_id} cannot be read from the team's lake now: {exc}") from None
