"""How a process-journal entry reads on a page: the lane it is drawn on and a one-line summary.

The known entry types (the journal library's and the published library's) each have a lane and a
sentence; any other type goes to the "other" lane and reads as its data, compact JSON, as it is.
"""

from __future__ import annotations

import json
from typing import Any

from devtool.web.pages.timeline_layout import format_duration

SUMMARY_CHARS = 160

# The lanes of the chart, top to bottom, and the entry types each one draws. Other types go to "other".
LANES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("lifecycle", "Lifecycle", ("state_transition", "restart")),
    ("triggers", "Triggers", ("trigger_event",)),
    ("invocations", "Invocations", ("invocation_start", "invocation_result")),
    ("context", "Context", ("context_update",)),
    ("conversation", "Conversation", ("user_prompt", "assistant_message", "conversation_turn")),
    ("tools", "Tools & code", ("tool_call", "tool_result", "file_write", "file_change", "code_execution")),
    ("checkpoints", "Checkpoints", ("checkpoint", "rewind")),
    ("errors", "Errors", ("error",)),
    ("other", "Other types", ()),
)
LANE_OF = {entry_type: key for key, _, types in LANES for entry_type in types}
KNOWN_TYPES = frozenset(LANE_OF)


def summarize(entry_type: str, data: dict[str, Any]) -> str:
    """One line saying what an entry did, in the words of its type; any other type as compact JSON."""
    text = _summary(entry_type, data)
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1] + "…"


def _summary(entry_type: str, data: dict[str, Any]) -> str:
    get = data.get
    match entry_type:
        case "state_transition":
            reason = f" ({_text(get('reason'))})" if get("reason") else ""
            return f"{_text(get('from_state', '?'))} → {_text(get('to_state', '?'))}{reason}"
        case "trigger_event":
            rest = {k: v for k, v in data.items() if k not in ("trigger_type", "trigger_id")}
            who = " ".join(_text(get(k)) for k in ("trigger_type", "trigger_id") if get(k))
            return f"{who or 'trigger'}{': ' + _compact(rest.get('payload', rest)) if rest else ''}"
        case "context_update":
            return f"{_text(get('key', '?'))} = {_compact(get('value'))}"
        case "user_prompt":
            return f"user: {_text(get('prompt', get('content', '')))}"
        case "assistant_message":
            return f"assistant: {_text(get('content', ''))}"
        case "conversation_turn":
            return f"{_text(get('role', '?'))}: {_text(get('content', ''))}"
        case "tool_call":
            return f"{_text(get('tool', get('name', '?')))}({_compact(get('args', get('arguments', {})))})"
        case "tool_result":
            return f"{_text(get('tool', get('name', '?')))} → {_compact(get('result', get('output')))}"
        case "invocation_start":
            return f"invocation {_text(get('invocation', '?'))} started" + (
                f" · run {_text(get('trace_id'))[:12]}" if get("trace_id") else ""
            )
        case "invocation_result":
            success, took_ms = get("success"), get("duration_ms")
            outcome = "succeeded" if success is True else "failed" if success is False else "ended"
            took = f" in {format_duration(took_ms)}" if isinstance(took_ms, int | float) else ""
            return f"invocation {_text(get('invocation', '?'))} {outcome}{took}"
        case "checkpoint":
            state = get("state")
            state = state if isinstance(state, dict) else {}
            context = state.get("context_state")
            context = context if isinstance(context, dict) else {}
            return f"checkpoint: {len(context)} context keys, lifecycle {_text(state.get('lifecycle_state', '?'))}"
        case "rewind":
            mode, actor = _text(get("mode", "?")), _text(get("actor", "?"))
            return f"rewind to {_text(get('target_entry_id', '?'))} ({mode}, by {actor})"
        case "error":
            return _text(get("message", _compact(data)))
    return _compact(data)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else _compact(value)


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "), default=str)[: SUMMARY_CHARS * 2]
