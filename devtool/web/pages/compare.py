"""Compare a replay with its original: both frame trees side by side, aligned by callId.

Each run's frame tree is its latest state, rebuilt by `restore_snapshot` from its stored events (so
the two sides are exactly what a rewind would see). callIds are deterministic (parent, kind, agent,
call order), so the same agent call has the same callId in both runs; a frame only one run has
(the replay took another path) is shown on its side alone. For each aligned frame: status, output
(or error) and memory, with what differs marked, and on the replay's side how many of its calls were
served from the snapshot's journal (cached) and how many ran live.
"""

from __future__ import annotations

import warnings
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from devtool.core import RestoreError
from devtool.core.debugger import restore_snapshot
from devtool.core.restore import RestoreWarning
from devtool.store import Store
from devtool.store.queries import run_events
from devtool.web.pages.diff import Change, diff


@dataclass(frozen=True)
class Side:
    """One run's frame at a callId."""

    agent_id: str
    status: str
    output: Any
    error: Any
    memory: dict[str, Any]
    cached: int = 0
    live: int = 0


@dataclass(frozen=True)
class Row:
    call_id: str
    depth: int
    left: Side | None
    right: Side | None
    memory_changes: list[Change] = field(default_factory=list)

    @property
    def status_differs(self) -> bool:
        return self.left is not None and self.right is not None and self.left.status != self.right.status

    @property
    def output_differs(self) -> bool:
        if self.left is None or self.right is None:
            return False
        return (self.left.output, self.left.error) != (self.right.output, self.right.error)

    @property
    def memory_differs(self) -> bool:
        return any(change.change != "same" for change in self.memory_changes)

    @property
    def differs(self) -> bool:
        one_sided = (self.left is None) != (self.right is None)
        return one_sided or self.status_differs or self.output_differs or self.memory_differs


@dataclass(frozen=True)
class Comparison:
    left_trace: str
    right_trace: str
    rows: list[Row]

    @property
    def differences(self) -> int:
        return sum(1 for row in self.rows if row.differs)

    @property
    def cached(self) -> int:
        return sum(row.right.cached for row in self.rows if row.right is not None)

    @property
    def live(self) -> int:
        return sum(row.right.live for row in self.rows if row.right is not None)


class CompareError(Exception):
    """A run that has no frame tree to compare (nothing restorable in it)."""


def compare(store: Store, left_trace: str, right_trace: str) -> Comparison:
    """The frame trees of runs `left_trace` (the original) and `right_trace` (the replay), aligned."""
    left = _latest(store, left_trace)
    right = _latest(store, right_trace)
    calls = _calls(store, right_trace)
    rows: list[Row] = []
    stack: list[tuple[int, dict[str, Any] | None, dict[str, Any] | None]] = [(0, left["root"], right["root"])]
    while stack:
        depth, a, b = stack.pop()
        call_id = (a or b or {}).get("callId", "")
        left_side = _side(a, Counter())
        right_side = _side(b, calls.get(call_id, Counter()))
        changes = diff(a["memory"], b["memory"]) if a is not None and b is not None else []
        rows.append(Row(call_id, depth, left_side, right_side, changes))
        a_children = a.get("children", {}) if a else {}
        b_children = b.get("children", {}) if b else {}
        order = list(a_children) + [key for key in b_children if key not in a_children]
        stack.extend((depth + 1, a_children.get(key), b_children.get(key)) for key in reversed(order))
    return Comparison(left_trace, right_trace, rows)


def _latest(store: Store, trace_id: str) -> dict[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RestoreWarning)
        try:
            return dict(restore_snapshot(run_events(store, trace_id)))
        except RestoreError as exc:
            raise CompareError(f"run {trace_id} has no frame tree to compare: {exc}") from None


def _side(frame: dict[str, Any] | None, calls: Counter[str]) -> Side | None:
    if frame is None:
        return None
    state = frame.get("state", {})
    return Side(
        agent_id=str(frame.get("agentId", "")),
        status=str(state.get("status", "")),
        output=state.get("output"),
        error=state.get("error"),
        memory=frame.get("memory", {}),
        cached=calls["cached"],
        live=calls["live"],
    )


def _calls(store: Store, trace_id: str) -> dict[str, Counter[str]]:
    """Per frame callId: how many model and tool calls of run `trace_id` were cached, and how many live."""
    counts: dict[str, Counter[str]] = {}
    for event in run_events(store, trace_id, types=("turn:end", "tools:execute:end")):
        if event["type"] == "turn:end":
            calls = [event]
        else:
            calls = [r for r in event.get("toolResults") or [] if isinstance(r, dict)]
        for call in calls:
            call_id = call.get("callPath", call.get("callId"))  # a tool result's own (traces before it: callId)
            if not isinstance(call_id, str) or "/" not in call_id:
                continue
            frame = call_id.rsplit("/", 1)[0]
            counts.setdefault(frame, Counter())["cached" if call.get("cache") is True else "live"] += 1
    return counts
