"""`run_with`: the root of a run, and where a snapshot is checked and injected for a replay."""

from __future__ import annotations

import inspect
import os
import time
from collections.abc import Callable, Iterable
from typing import Any

from devtool.core.errors import SnapshotDisabledError
from devtool.core.events import EVENTS, Emitter, Sink, TraceEvent, error_info, trace_event
from devtool.core.frame import CURRENT_FRAME, Frame, Run
from devtool.core.ids import new_span_id, new_trace_id
from devtool.core.jsonvalue import JSON, describe
from devtool.core.snapshot import ROOT_CALL_ID, AgentSnapshot, normalize, validate


def snapshots_enabled_by_default() -> bool:
    """True unless `DEVTOOL_ENV=production`: snapshots cost memory, so production opts in."""
    return os.environ.get("DEVTOOL_ENV", "").strip().lower() != "production"


async def run_with(
    fn: Callable[[], Any],
    *,
    snapshot: AgentSnapshot | dict[str, Any] | None = None,
    enable_snapshot: bool | None = None,
    sinks: Iterable[Sink] = (),
    metadata: dict[str, JSON] | None = None,
) -> Any:
    """Run `fn()` as the root of a new run; with `snapshot`, prompts and tools replay from its journal.

    The snapshot is validated before anything runs (a malformed one raises `SnapshotError` naming
    the field). With snapshots off (`enable_snapshot=False`, or `DEVTOOL_ENV=production` and no
    explicit `True`) nothing is journaled and passing a snapshot raises `SnapshotDisabledError`.
    """
    enabled = snapshots_enabled_by_default() if enable_snapshot is None else enable_snapshot
    restored = None
    if snapshot is not None:
        if not enabled:
            raise SnapshotDisabledError(
                "snapshots are disabled for this run (DEVTOOL_ENV=production): pass enable_snapshot=True to replay one"
            )
        restored = normalize(validate(snapshot))
    run = Run(trace_id=new_trace_id(), emitter=Emitter(sinks), enable_snapshot=enabled)
    span = new_span_id()
    root = Frame(
        run=run,
        call_id=ROOT_CALL_ID,
        agent_id="",
        span_id=span,
        parent=None,
        model=None,
        restored=restored["root"] if restored else None,
    )
    config: dict[str, JSON] = {"enableSnapshot": enabled}
    if restored is not None:
        config["replayOf"] = dict(restored["provenance"])  # type: ignore[arg-type]

    def event(kind: str, **fields: Any) -> TraceEvent:
        return trace_event(kind, "", run.trace_id, span, "", callId=ROOT_CALL_ID, **fields)

    def finish(outcome: dict[str, Any]) -> None:
        elapsed = (time.perf_counter() - started) * 1000
        memory = root.memory.to_json()
        run.emitter.emit(event(EVENTS.RUN_WITH_END, memory=memory, duration=elapsed, metrics=_metrics(run), **outcome))
        run.emitter.flush()

    started = time.perf_counter()
    run.emitter.emit(event(EVENTS.RUN_WITH_START, metadata=describe(metadata or {}), config=config))
    token = CURRENT_FRAME.set(root)
    try:
        result = fn()
        if inspect.isawaitable(result):
            result = await result
    except BaseException as exc:
        root.status, root.error = "failed", error_info(exc)
        finish({"success": False, "error": root.error})
        raise
    finally:
        CURRENT_FRAME.reset(token)
    root.status, root.output = "completed", result
    finish({"success": True, "result": describe(result)})
    return result


def _metrics(run: Run) -> JSON:
    totals = run.budget.totals()
    return {
        "totalPromptTokens": totals["promptTokens"],
        "totalCompletionTokens": totals["completionTokens"],
        "totalTokens": totals["totalTokens"],
        "costs": totals["costs"],  # type: ignore[dict-item]
        "modelCalls": totals["callCount"],
        "unpricedCalls": totals["unpricedCalls"],
    }
