"""OpenAI's Responses API (`POST .../responses`), as the instrumentation reads it.

`instructions` are a system message; `input` is text (a user message) or items: messages (text or
content parts), `function_call` items (an assistant's tool call) and `function_call_output` items (a
tool's result); other items (reasoning, built-in tools' calls) are shown by their type. Function tools
are the turn's tools, a JSON-schema `text.format` its schema. The answer is a `response` whose output
holds message and `function_call` items; streamed, its text arrives as `response.output_text.delta`
events and the whole response with the last event (`response.completed`, or `.incomplete`). Usage
counts as Chat Completions' does (`chat_usage`).
"""

from __future__ import annotations

from typing import Any, ClassVar

from devtool.core.model import Message, Usage
from devtool.core.providers.adapter import Answer
from devtool.core.providers.openai_chat import OpenAIChatModel, chat_answer, chat_usage
from devtool.instrument.api import Shown, payloads, tool_definition

# How a response's status says it stopped, in chat_answer's words (tool calls are told by themselves).
STOPPED = {"completed": "stop", "incomplete": "length"}
LAST_EVENTS = frozenset({"response.completed", "response.incomplete"})


class Responses:
    name: ClassVar[str] = "openai.responses"
    provider: ClassVar[str] = "openai"
    path: ClassVar[str] = "/responses"
    not_hashed: ClassVar[frozenset[str]] = OpenAIChatModel.NOT_HASHED

    def shown(self, body: dict[str, Any]) -> Shown:
        messages: list[Message] = []
        if isinstance(instructions := body.get("instructions"), str) and instructions:
            messages.append({"role": "system", "content": instructions})
        items = body.get("input")
        if isinstance(items, str):
            messages.append({"role": "user", "content": items})
        else:
            messages.extend(_message(item) for item in items or [] if isinstance(item, dict))
        tools = [
            tool_definition(t.get("name"), t.get("description"), t.get("parameters"))
            for t in body.get("tools") or []
            if isinstance(t, dict) and t.get("type") == "function"
        ]
        form = (body.get("text") or {}).get("format") if isinstance(body.get("text"), dict) else None
        schema = form.get("schema") if isinstance(form, dict) and form.get("type") == "json_schema" else None
        return Shown(messages, tools, schema)

    def answer(self, body: dict[str, Any]) -> Answer:
        pieces: list[str] = []
        calls: list[tuple[str | None, str, str]] = []
        for item in body.get("output") or ():
            if item.get("type") == "message":
                pieces.extend(part.get("text") or part.get("refusal") or "" for part in item.get("content") or ())
            elif item.get("type") == "function_call":
                calls.append((item.get("call_id"), item.get("name", ""), item.get("arguments", "")))
        stopped = "tool_calls" if calls else STOPPED.get(body.get("status") or "")
        return chat_answer(pieces, calls, stopped, usage_of(body.get("usage")), body.get("model"))

    def reader(self) -> EventReader:
        return EventReader(self)


class EventReader:
    """A streamed response, event by event: its text as it comes, the whole response at the end."""

    __slots__ = ("_api", "_final", "_pieces", "complete")

    def __init__(self, api: Responses) -> None:
        self._api = api
        self._pieces: list[str] = []
        self._final: dict[str, Any] | None = None
        self.complete = False

    def read(self, events: list[tuple[str | None, str]], pieces: list[str]) -> None:
        parsed, error = payloads([data for _, data in events])
        for payload in parsed:
            kind = payload.get("type")
            if kind == "response.output_text.delta":
                piece: str = payload.get("delta") or ""
                self._pieces.append(piece)
                if piece:
                    pieces.append(piece)
            elif kind in LAST_EVENTS:
                self._final = payload.get("response") or {}
                self.complete = True
        if error is not None:
            raise error

    def answer(self) -> Answer:
        if self._final is not None:
            return self._api.answer(self._final)
        return chat_answer(self._pieces, [], None, None, None)


def usage_of(usage: Any) -> Usage | None:
    """The Responses API's `usage` object as ours (None: the server sent none)."""
    if not isinstance(usage, dict):
        return None
    cached = (usage.get("input_tokens_details") or {}).get("cached_tokens")
    reasoning = (usage.get("output_tokens_details") or {}).get("reasoning_tokens")
    prompt, completion = usage.get("input_tokens") or 0, usage.get("output_tokens") or 0
    return chat_usage(prompt, completion, usage.get("total_tokens"), cached, reasoning)


def _message(item: dict[str, Any]) -> Message:
    kind = item.get("type", "message")
    if kind == "function_call":
        call = {
            "id": str(item.get("call_id", "")),
            "name": str(item.get("name", "")),
            "arguments": item.get("arguments", ""),
        }
        return {"role": "assistant", "content": None, "tool_calls": [call]}  # type: ignore[list-item]
    if kind == "function_call_output":
        return {"role": "tool", "tool_call_id": str(item.get("call_id", "")), "content": item.get("output")}
    if kind != "message":
        return {"role": "assistant", "content": f"[{kind}]"}
    content = item.get("content")
    if isinstance(content, list):
        texts: list[str] = [
            part["text"] for part in content if isinstance(part, dict) and isinstance(part.get("text"), str)
        ]
        content = "".join(texts) if len(texts) == len(content) else content
    return {"role": str(item.get("role", "user")), "content": content}
