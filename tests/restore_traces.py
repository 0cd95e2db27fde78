"""Traces for the tests of `restore_snapshot`: hand-written events of one run, and a run's own."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from devtool.core import MemorySink, run_with

TRACE = "a" * 32


class Trace:
    """Hand-written events of one run, one millisecond apart unless told."""

    def __init__(self, trace_id: str = TRACE) -> None:
        self.trace_id = trace_id
        self.events: list[dict[str, Any]] = []
        self.clock = itertools.count(1_000)

    def add(self, type_: str, span: str, parent: str = "", *, at: int | None = None, **fields: Any) -> dict[str, Any]:
        event = {
            "schemaVersion": 1,
            "type": type_,
            "timestamp": next(self.clock) if at is None else at,
            "agentId": fields.pop("agentId", ""),
            "trace": {"traceId": self.trace_id, "spanId": span, "parentSpanId": parent},
            **fields,
        }
        self.events.append(event)
        return event

    def agent(self, agent_id: str, span: str, parent: str, **fields: Any) -> None:
        """agent:start and generation:start (span `span + "-g"`), as both libraries emit them."""
        self.add("agent:start", span, parent, agentId=agent_id, **fields)
        self.add("generation:start", f"{span}-g", span, agentId=agent_id, generationId=0)

    def end(self, agent_id: str, span: str, parent: str, *, memory: Any = None, **outcome: Any) -> None:
        outcome = outcome or {"success": True, "result": f"{agent_id} done"}
        self.add("generation:end", f"{span}-g", span, agentId=agent_id, memory=memory or {}, **outcome)
        self.add("agent:end", span, parent, agentId=agent_id, **outcome)


def frame_at(snapshot: dict[str, Any], *path: str) -> dict[str, Any]:
    """The frame of `snapshot` reached from its root through the callIds of `path`."""
    frame = snapshot["root"]
    for call_id in path:
        frame = frame["children"][call_id]
    return frame


def run_events(fn: Any, **kwargs: Any) -> list[Any]:
    """The events of a run of `fn` in `run_with`, as a `MemorySink` took them."""
    sink = MemorySink()
    asyncio.run(run_with(fn, sinks=[sink], **kwargs))
    return sink.events
