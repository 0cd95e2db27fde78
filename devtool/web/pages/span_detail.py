"""The detail panel's content for one span: what went in, what came out, and the frame's memory.

A page shows a span the way its kind reads best: an agent's props and result, a turn's messages
by role and the model's answer with tokens and cost, a tool batch's calls with inputs and outputs,
the run's entrypoint and metrics. The start and end events are always there too, as they were.
A tool result inside a batch is addressed as `<batch span id>#<index>`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from devtool.store import NotFoundError, Store
from devtool.store.queries import SpanDetail, span_detail
from devtool.store.queries.navigation import PathStep, generation_memories, model_calls
from devtool.web.pages.diff import Change, diff


@dataclass(frozen=True)
class FrameMemory:
    """A frame's memory at the end of the generation that holds the span, and what that generation changed."""

    agent: str
    memory: dict[str, Any]
    changes: list[Change]
    since: str  # what `changes` compares against


@dataclass(frozen=True)
class SpanDetailPane:
    detail: SpanDetail
    kind: str
    title: str
    result_index: int | None = None
    inputs: Any = None
    output: Any = None
    error: Any = None
    messages: list[dict[str, Any]] = field(default_factory=list)
    answer: Any = None
    tool_results: list[dict[str, Any]] = field(default_factory=list)
    usage: list[dict[str, Any]] = field(default_factory=list)
    memory: FrameMemory | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def tokens(self) -> int:
        return sum(int((call.get("usage") or {}).get("totalTokens", 0)) for call in self.usage)

    @property
    def cost(self) -> float:
        return sum(float((call.get("costs") or {}).get("micro_usd", 0)) for call in self.usage)


def span_detail_pane(store: Store, trace_id: str, span_id: str, path: list[PathStep]) -> SpanDetailPane:
    """The detail of `span_id` (or of one tool result, `batch#i`); `NotFoundError` if there is none."""
    batch_id, _, index = span_id.partition("#")
    detail = span_detail(store, trace_id, batch_id)
    start, end = detail.start_event or {}, detail.end_event or {}
    body = {**start, **end}
    memory = _memory(store, trace_id, detail, path)
    if index:
        results = end.get("toolResults") or []
        if not index.isdigit() or int(index) >= len(results):
            raise NotFoundError(f"no tool result {span_id!r} in run {trace_id!r}")
        result = results[int(index)]
        return SpanDetailPane(
            detail,
            "tool",
            f"tool {result.get('toolName', '?')}",
            result_index=int(index),
            inputs=result.get("input"),
            output=result.get("output"),
            error=result.get("error"),
            tool_results=[result],
            memory=memory,
        )
    kind = detail.kind
    common: dict[str, Any] = {"error": body.get("error"), "memory": memory}
    if kind == "agent":
        return SpanDetailPane(
            detail, kind, f"agent {detail.agent_id}", inputs=start.get("props"), output=end.get("result"), **common
        )
    if kind == "runWith":
        extra: dict[str, Any] = {key: body[key] for key in ("metadata", "config", "metrics") if key in body}
        return SpanDetailPane(detail, kind, "run", output=end.get("result"), extra=extra, **common)
    if kind == "turn":
        return SpanDetailPane(
            detail,
            kind,
            f"turn {start.get('step', '')}".strip(),
            messages=list(start.get("messages") or end.get("messages") or []),
            answer=end.get("message"),
            usage=model_calls(store, trace_id, batch_id),
            extra={key: body[key] for key in ("model", "schema", "toolConfig") if body.get(key) is not None},
            **common,
        )
    if kind == "tools:execute":
        return SpanDetailPane(
            detail, kind, f"tools {detail.name}", tool_results=list(end.get("toolResults") or []), **common
        )
    if kind == "generation":
        return SpanDetailPane(detail, kind, detail.name, output=end.get("result"), **common)
    return SpanDetailPane(detail, kind, detail.name, output=end.get("result"), **common)


def _memory(store: Store, trace_id: str, detail: SpanDetail, path: list[PathStep]) -> FrameMemory | None:
    """The memory of the agent frame that holds the span (memory is recorded at `generation:end`)."""
    agent = next((step for step in reversed(path) if step.kind == "agent"), None)
    if detail.kind == "agent":
        agent = PathStep(detail.span_id, 0, detail.kind, detail.agent_id)
    if agent is None:
        return None
    memories = generation_memories(store, trace_id, agent.span_id)
    if not memories:
        return None
    moment = detail.end_ms if detail.end_ms is not None else detail.start_ms
    current = next((i for i, m in enumerate(memories) if m.ended_ms >= moment), len(memories) - 1)
    previous = memories[current - 1].memory if current > 0 else {}
    since = "the previous generation" if current > 0 else "the start of the frame (empty unless restored)"
    return FrameMemory(agent.agent_id or "", memories[current].memory, diff(previous, memories[current].memory), since)
