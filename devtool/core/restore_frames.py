"""The frames `restore_snapshot` builds while it walks a trace, and how they become snapshot frames.

A `RestoredFrame` is one agent call (or the run's root) as far as the trace has told: its callId,
memory, prompt and tool journals, children and status. It keeps what a snapshot needs and no event,
and it knows the two rules a frame obeys: the callId the runtime gives its next sub-agent, and what
ending means for children still running.
"""

from __future__ import annotations

from typing import Any

from devtool.core.budget import Budget, BudgetTotals, merged
from devtool.core.jsonvalue import JSON
from devtool.core.snapshot import FrameSnapshot, FrameState, JournalRecord, Status


class RestoredFrame:
    """One frame of the snapshot being rebuilt; mutable while the trace is walked."""

    __slots__ = (
        "agent_id",
        "budget",
        "call_id",
        "children",
        "error",
        "memory",
        "orphaned",
        "output",
        "prompt",
        "seq",
        "status",
        "tool",
    )

    def __init__(self, call_id: str, agent_id: str) -> None:
        self.call_id = call_id
        self.agent_id = agent_id
        self.memory: dict[str, JSON] = {}
        self.prompt: dict[str, JournalRecord] = {}
        self.tool: dict[str, JournalRecord] = {}
        self.children: dict[str, RestoredFrame] = {}
        self.status: Status = "running"
        self.output: JSON = None
        self.error: JSON = None
        # Once this frame is not running: why children still running (or starting later) have failed.
        self.orphaned = ""
        # Next seq per agent id, made on a first sub-agent without a callId: most frames never need it.
        self.seq: dict[str, int] | None = None
        # The model requests this frame made itself (`model:call:end` usage), rebuilt into `budgetState`.
        self.budget = Budget()

    def child_call_id(self, agent_id: str) -> str:
        """`<callId>/agent:<agentId>:<seq>`, seq counting this frame's calls of that agent in order.

        The runtime's rule (`Frame.next_call_id`), for traces whose events carry no callId (the
        TypeScript library's): one counter per agent id, so finding the next seq never scans siblings.
        """
        if self.seq is None:
            self.seq = {}
        seq = self.seq.get(agent_id, 0)
        self.seq[agent_id] = seq + 1
        return f"{self.call_id}/agent:{agent_id}:{seq}"

    def add_child(self, child: RestoredFrame) -> None:
        """`child` started in this frame; if this one has ended already, it starts abandoned."""
        self.children[child.call_id] = child
        if self.status != "running":
            child.abandon(self.orphaned)

    def settle(self, status: Status, output: JSON, error: JSON) -> None:
        """This frame's own end event: its outcome stands, and descendants still running are failed.

        An outcome set earlier by an ancestor's end (`abandon`) is replaced: the frame's own end
        event says what really happened to it.
        """
        self.status, self.output, self.error = status, output, error
        ended = "the run" if self.agent_id == "" else f"agent {self.call_id}"
        self.orphaned = f"{ended} ended before this agent did (marked failed by restore_snapshot)"
        self.abandon_children(self.orphaned)

    def abandon(self, message: str) -> None:
        """Failed because an ancestor ended while this frame ran: no ended frame holds a running one."""
        self.status, self.output = "failed", None
        self.error = {"name": "ParentEnded", "message": message}
        self.orphaned = message
        self.abandon_children(message)

    def abandon_children(self, message: str) -> None:
        for child in self.children.values():
            if child.status == "running":
                child.abandon(message)

    def aggregate_totals(self) -> BudgetTotals:
        """The usage of this frame's model requests and all its descendants'."""
        own = self.budget.totals()
        if not self.children:
            return own
        return merged([own, *(child.aggregate_totals() for child in self.children.values())])

    def to_snapshot(self) -> FrameSnapshot:
        return self.shaped({call_id: child.to_snapshot() for call_id, child in self.children.items()})

    def shaped(self, children: dict[str, Any]) -> FrameSnapshot:
        """This frame as a snapshot frame whose `children` are `children`: the frames themselves, or
        (a snapshot stored as a tree of frames) their node ids."""
        state: FrameState = {"status": self.status}
        if self.status == "completed":
            state["output"] = self.output
        elif self.status == "failed":
            state["error"] = self.error
        return {
            "callId": self.call_id,
            "agentId": self.agent_id,
            "memory": self.memory,
            "journal": {"prompt": self.prompt, "tool": self.tool},
            "children": children,
            "state": state,
            "budgetState": {"own": self.budget.totals(), "aggregate": self.aggregate_totals()},
        }

    def is_empty(self) -> bool:
        """True when the trace told nothing about this frame: no child, no journal entry, no memory."""
        return not (self.children or self.prompt or self.tool or self.memory)
