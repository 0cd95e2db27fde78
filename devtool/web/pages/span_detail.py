"""The detail panel's content for one span: what went in, what came out, and the frame's memory.

A page shows a span the way its kind reads best: an agent's props and result, a turn's messages
by role and the model's answer (or, while a streaming model answers, the answer so far) with its
tokens and cost, a tool batch's calls with inputs and outputs, the run's entrypoint. Any other span's
tokens and cost are those of the model calls under it, rolled up (`devtool.store.queries.usage`),
which the page asks for after the detail, as they can take a walk of the run. The start and end
events are always there too, as they were. A tool result inside a batch is addressed as
`<batch span id>#<index>`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from devtool.actions.key_diff import Change, diff
from devtool.store import NotFoundError, Store
from devtool.store.queries import SpanDetail, span_detail
from devtool.store.queries.navigation import PathStep, generation_memories
from devtool.store.queries.streaming import answer_so_far
from devtool.store.queries.usage import Usage, span_usage
from devtool.web.pages.call_edit import CallEdit, call_edit


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
    # A turn's own model calls; None for other spans (theirs are rolled up, and asked for apart).
    usage: Usage | None = None
    # A running turn's answer so far, from its latest `turn:progress`.
    partial: str | None = None
    memory: FrameMemory | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def edit(self) -> CallEdit | None:
        """The fork editor of this span's call, if it is a finished turn or one tool call."""
        # A batch of one call (a `@devtool.tool`, an OTel tool span) is edited as its one result.
        one = self.result_index is not None or (self.kind == "tools:execute" and len(self.tool_results) == 1)
        result = self.tool_results[0] if one else None
        detail = self.detail
        return call_edit(self.kind, detail.status, detail.call_id, detail.end_event or {}, result)

    @property
    def rolls_up_usage(self) -> bool:
        """Whether the page asks for the usage of the model calls under this span."""
        return self.usage is None and self.result_index is None and self.kind != "tools:execute"


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
        # Its `metrics` (tokens and cost) are shown as the run's usage, not as raw JSON.
        extra: dict[str, Any] = {key: body[key] for key in ("metadata", "config") if key in body}
        return SpanDetailPane(detail, kind, "run", output=end.get("result"), extra=extra, **common)
    if kind == "turn":
        return SpanDetailPane(
            detail,
            kind,
            str(start.get("name") or f"turn {start.get('step', '')}".strip()),
            messages=list(start.get("messages") or end.get("messages") or []),
            answer=end.get("message"),
            usage=span_usage(store, trace_id, batch_id),
            partial=answer_so_far(store, trace_id, batch_id) if detail.status == "running" else None,
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


def turn_answer(store: Store, trace_id: str, span_id: str) -> SpanDetailPane:
    """A turn's answer as the detail shows it while the run is live: so far, or (once ended) the whole."""
    detail = span_detail(store, trace_id, span_id)
    if detail.kind != "turn":
        raise NotFoundError(f"span {span_id!r} of run {trace_id!r} is a {detail.kind}, not a turn")
    running = detail.status == "running"
    answer = (detail.end_event or {}).get("message")
    partial = answer_so_far(store, trace_id, span_id) if running else None
    return SpanDetailPane(detail, "turn", detail.name, answer=answer, partial=partial)


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
