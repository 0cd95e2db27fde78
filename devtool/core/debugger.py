"""The debugger's names: `dump_snapshot` (capture the live run), `restore_snapshot` (from a trace) and
`fork_snapshot` (a counterfactual: edited calls' outputs and inputs, `counterfactual.py`)."""

from __future__ import annotations

from devtool.core.counterfactual import fork_snapshot
from devtool.core.errors import SnapshotDisabledError
from devtool.core.events import EVENTS, now_ms, trace_event
from devtool.core.frame import current_frame
from devtool.core.ids import new_span_id
from devtool.core.jsonvalue import JSON, describe
from devtool.core.restore import restore_snapshot
from devtool.core.snapshot import SNAPSHOT_VERSION, AgentSnapshot
from devtool.core.snapshot_tree import snapshot_id

__all__ = ["dump_snapshot", "fork_snapshot", "restore_snapshot"]


def dump_snapshot(*, metadata: dict[str, JSON] | None = None) -> AgentSnapshot:
    """The state of the whole run, from its root down, as a JSON-ready deep copy.

    Frames still executing (the caller and its ancestors, siblings in flight) are `running`. The
    snapshot is also emitted as a `snapshot:dump` event, so a DevTool following the run shows it
    at the moment it was taken.
    """
    frame = current_frame("dump_snapshot()")
    run = frame.run
    if not run.enable_snapshot:
        raise SnapshotDisabledError(
            "dump_snapshot() is disabled for this run (snapshots are off, the production default): "
            "pass enable_snapshot=True to run_with, or collect trace events and use restore_snapshot()"
        )
    root = frame
    while root.parent is not None:
        root = root.parent
    snapshot: AgentSnapshot = {
        "processId": run.trace_id,
        "timestamp": now_ms(),
        "root": root.to_snapshot(),
        "provenance": {"traceId": run.trace_id, "spanId": frame.span_id, "source": "dump"},
        "version": SNAPSHOT_VERSION,
    }
    if metadata is not None:
        snapshot["metadata"] = describe(metadata)  # type: ignore[typeddict-item]
    run.emitter.emit(
        trace_event(
            EVENTS.SNAPSHOT_DUMP,
            frame.agent_id,
            run.trace_id,
            new_span_id(),
            frame.span_id,
            callId=frame.call_id,
            snapshotId=snapshot_id(snapshot),
            snapshot=snapshot,
        )
    )
    return snapshot
