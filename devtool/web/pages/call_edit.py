"""What the fork editor of a span offers: the call it edits, and what the call returned (and, for a
turn, the messages it sent), as the editor's starting text.

A turn's answer starts as its text when it is only text (the edit is then taken as text: for an
SDK-recorded turn the replay writes it as the provider's answer), else as its message's JSON; a
tool call's output as JSON. A turn's messages are the ones its start showed, in our shape, for a
`prompt()` turn and an SDK-recorded one alike (the replay writes the latter's edit into its API's
request body: `devtool.instrument.edited_input`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CallEdit:
    """The fork editor of one call: its callId, kind (`turn` or `tool`), the output's text and how it
    reads (`text` or `json`), and the input messages' JSON (None: not editable)."""

    call_id: str
    kind: str
    output: str
    format: str
    messages: str | None


def call_edit(
    kind: str, status: str, call_id: str | None, end: dict[str, Any], result: dict[str, Any] | None
) -> CallEdit | None:
    """The editor for a finished, successful turn (`kind` "turn") or one tool result (`result`); None
    for any other span, or a call with no call path (a trace written without one)."""
    if result is not None:
        path = result.get("callPath", result.get("callId"))
        if result.get("success") is not True or not isinstance(path, str) or "/tool:" not in path:
            return None
        return CallEdit(path, "tool", editor_json(result.get("output")), "json", None)
    if kind != "turn" or status != "completed" or not isinstance(call_id, str) or "/turn:" not in call_id:
        return None
    message = end.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str) and not (isinstance(message, dict) and message.get("tool_calls")):
        output, form = content, "text"
    else:
        output, form = editor_json(message), "json"
    messages = end.get("messages")
    editable = isinstance(messages, list) and bool(messages)
    return CallEdit(call_id, "turn", output, form, editor_json(messages) if editable else None)


def editor_json(value: Any) -> str:
    """`value` as an editor starts from it: indented JSON, its text as written."""
    return json.dumps(value, indent=2, ensure_ascii=False)
