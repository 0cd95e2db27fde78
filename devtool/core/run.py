"""`run_with` and `RunScope`: the root of a run, and where a snapshot is checked and injected for a replay."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterable
from contextvars import Token
from typing import Any

from devtool.core.counterfactual import edits_of
from devtool.core.errors import SnapshotDisabledError
from devtool.core.events import EVENTS, Emitter, Sink, TraceEvent, trace_event
from devtool.core.frame import CURRENT_FRAME, Frame, Run
from devtool.core.ids import new_span_id, new_trace_id
from devtool.core.jsonvalue import JSON, describe
from devtool.core.lookups import Observer
from devtool.core.scoped import run_in
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
    observe: Observer | None = None,
) -> Any:
    """Run `fn()` as the root of a new run; with `snapshot`, prompts and tools replay from its journal.

    The snapshot is validated before anything runs (a malformed one raises `SnapshotError` naming
    the field). With snapshots off (`enable_snapshot=False`, or `DEVTOOL_ENV=production` and no
    explicit `True`) nothing is journaled and passing a snapshot raises `SnapshotDisabledError`.
    `observe` hears of every journal lookup before its call is answered (`lookups.py`), and may refuse
    the call by raising.
    """
    scope = RunScope(
        snapshot=snapshot, enable_snapshot=enable_snapshot, sinks=sinks, metadata=metadata, observe=observe
    )
    return await run_in(scope, fn)


class RunScope:
    """A run's root frame, opened around code that runs in it: `run_with` around `fn()`, and
    `devtool.record` around a block of existing code (which has no function to hand over).

    `open()` emits `runWith:start` and makes the root the current frame; `close()` makes it current
    no longer and emits `runWith:end` with the outcome. Both in the same context (thread or task).
    """

    def __init__(
        self,
        *,
        snapshot: AgentSnapshot | dict[str, Any] | None = None,
        enable_snapshot: bool | None = None,
        sinks: Iterable[Sink] = (),
        metadata: dict[str, JSON] | None = None,
        name: str | None = None,
        observe: Observer | None = None,
    ) -> None:
        enabled = snapshots_enabled_by_default() if enable_snapshot is None else enable_snapshot
        restored = None
        if snapshot is not None:
            if not enabled:
                raise SnapshotDisabledError(
                    "snapshots are disabled for this run (DEVTOOL_ENV=production): "
                    "pass enable_snapshot=True to replay one"
                )
            restored = normalize(validate(snapshot))
        self.run = Run(
            trace_id=new_trace_id(),
            emitter=Emitter(sinks),
            enable_snapshot=enabled,
            observe=observe,
            edits=edits_of(restored) if restored else {},
        )
        self.span = new_span_id()
        self.root = Frame(
            run=self.run,
            call_id=ROOT_CALL_ID,
            agent_id="",
            span_id=self.span,
            parent=None,
            model=None,
            restored=restored["root"] if restored else None,
        )
        self.config: dict[str, JSON] = {"enableSnapshot": enabled}
        if restored is not None:
            self.config["replayOf"] = dict(restored["provenance"])  # type: ignore[arg-type]
        self.metadata = metadata
        # What the run is called where it has no agent to be named after (a recorded block of code).
        self.named: dict[str, JSON] = {"name": name} if name else {}
        self._started = 0.0
        self._token: Token[Frame] | None = None

    def open(self) -> Frame:
        self._started = time.perf_counter()
        self.run.emitter.emit(
            self._event(EVENTS.RUN_WITH_START, metadata=describe(self.metadata or {}), config=self.config, **self.named)
        )
        self._token = CURRENT_FRAME.set(self.root)
        return self.root

    def close(self, result: Any = None, *, error: BaseException | None = None) -> None:
        if self._token is not None:
            # A run closed where it was not opened (a process's run, at exit) leaves the context alone.
            with contextlib.suppress(ValueError):
                CURRENT_FRAME.reset(self._token)
            self._token = None
        root = self.root
        self.run.emitter.settle()  # deferred work counts usage into the run's metrics
        outcome = root.settle(result, error)
        elapsed = (time.perf_counter() - self._started) * 1000
        memory = root.memory.to_json()
        self.run.emitter.emit(
            self._event(EVENTS.RUN_WITH_END, memory=memory, duration=elapsed, metrics=_metrics(self.run), **outcome)
        )
        self.run.emitter.flush()

    def _event(self, kind: str, **fields: Any) -> TraceEvent:
        return trace_event(kind, "", self.run.trace_id, self.span, "", callId=ROOT_CALL_ID, **fields)


def close_with_sinks(scope: RunScope, sinks: Iterable[Sink], error: BaseException | None, result: Any = None) -> None:
    """Close `scope` with `error` (or `result`), then the `sinks` its opener made for it (each that has a
    `close`), even when closing the scope raised: a sink left open would keep its buffered events and
    its file or thread."""
    try:
        scope.close(result, error=error)
    finally:
        for sink in sinks:
            close = getattr(sink, "close", None)
            if callable(close):
                close()


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
