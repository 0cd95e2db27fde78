"""Anthropic's Messages API (`POST /v1/messages`), as the instrumentation reads it.

`system` is a system message; a message's text blocks are its text, its `tool_use` blocks its tool
calls, and each `tool_result` block a tool message of its own (as ours are, before the adapter merges
them into Anthropic's shape). The answer's blocks, stop reason and usage are put together by the same
code as the adapter's (`messages_answer`, `messages_usage`); streamed, they arrive as `message_start`,
content block events, `message_delta` and `message_stop`.
"""

from __future__ import annotations

from typing import Any, ClassVar

import orjson

from devtool.core.model import Message, ToolCallRequest, Usage
from devtool.core.providers.adapter import Answer
from devtool.core.providers.anthropic_messages import AnthropicModel, messages_answer, messages_usage
from devtool.instrument.api import Shown, payloads, tool_definition


class Messages:
    name: ClassVar[str] = "anthropic.messages"
    provider: ClassVar[str] = "anthropic"
    path: ClassVar[str] = "/v1/messages"
    not_hashed: ClassVar[frozenset[str]] = AnthropicModel.NOT_HASHED

    def shown(self, body: dict[str, Any]) -> Shown:
        messages: list[Message] = []
        system = _text(body.get("system"))
        if system:
            messages.append({"role": "system", "content": system})
        for wire in body.get("messages") or []:
            if isinstance(wire, dict):
                messages.extend(_messages(wire))
        tools = [
            tool_definition(t.get("name"), t.get("description"), t.get("input_schema"))
            for t in body.get("tools") or []
            if isinstance(t, dict) and "name" in t
        ]
        return Shown(messages, tools, None)

    def answer(self, body: dict[str, Any]) -> Answer:
        blocks = [_answer_block(block) for block in body.get("content") or ()]
        return messages_answer(blocks, body.get("stop_reason"), usage_of(body.get("usage"), None), body.get("model"))

    def reader(self) -> EventReader:
        return EventReader()


class EventReader:
    """A streamed message, event by event."""

    __slots__ = ("_blocks", "_final", "_served", "_started", "_stop", "complete")

    def __init__(self) -> None:
        self._blocks: list[dict[str, Any]] = []
        self._stop: str | None = None
        self._started: dict[str, Any] | None = None
        self._final: dict[str, Any] | None = None
        self._served: str | None = None
        self.complete = False

    def read(self, events: list[tuple[str | None, str]], pieces: list[str]) -> None:
        parsed, error = payloads([data for _, data in events])
        blocks = self._blocks
        for payload in parsed:
            kind = payload.get("type")
            if kind == "content_block_delta":
                delta = payload.get("delta") or {}
                if delta.get("type") == "text_delta":
                    blocks[-1]["text"] += delta.get("text", "")
                    if text := delta.get("text"):
                        pieces.append(text)
                elif delta.get("type") == "input_json_delta":
                    blocks[-1]["json"] += delta.get("partial_json", "")
            elif kind == "content_block_start":
                block = payload.get("content_block") or {}
                if block.get("type") == "tool_use":
                    blocks.append({"type": "tool_use", "id": block.get("id"), "name": block.get("name"), "json": ""})
                else:
                    blocks.append({"type": block.get("type"), "text": block.get("text") or ""})
            elif kind == "message_start":
                message = payload.get("message") or {}
                self._started, self._served = message.get("usage"), message.get("model")
            elif kind == "message_delta":
                self._stop = (payload.get("delta") or {}).get("stop_reason") or self._stop
                self._final = payload.get("usage") or self._final
            elif kind == "message_stop":
                self.complete = True
        if error is not None:
            raise error

    def answer(self) -> Answer:
        return messages_answer(self._blocks, self._stop, usage_of(self._started, self._final), self._served)


def usage_of(started: Any, final: Any) -> Usage | None:
    """Usage from the message's (or `message_start`'s) `usage`, updated by the last `message_delta`'s."""
    if not isinstance(started, dict):
        return None
    counts = {**started, **{k: v for k, v in (final or {}).items() if v is not None}}
    thinking = (counts.get("output_tokens_details") or {}).get("thinking_tokens") or 0
    return messages_usage(
        counts.get("input_tokens") or 0,
        counts.get("cache_read_input_tokens") or 0,
        counts.get("cache_creation_input_tokens") or 0,
        counts.get("output_tokens") or 0,
        thinking,
    )


def _answer_block(block: dict[str, Any]) -> dict[str, Any]:
    if block.get("type") == "tool_use":
        arguments = orjson.dumps(block.get("input") or {}).decode()
        return {"type": "tool_use", "id": block.get("id"), "name": block.get("name"), "json": arguments}
    return {"type": block.get("type"), "text": block.get("text") or ""}


def _messages(wire: dict[str, Any]) -> list[Message]:
    """One wire message as ours: tool results apart, each a tool message."""
    content = wire.get("content")
    role = "assistant" if wire.get("role") == "assistant" else "user"
    if not isinstance(content, list):
        return [{"role": role, "content": content}]
    shown: list[Message] = [
        {"role": "tool", "tool_call_id": str(block.get("tool_use_id", "")), "content": _text(block.get("content"))}
        for block in content
        if isinstance(block, dict) and block.get("type") == "tool_result"
    ]
    calls: list[ToolCallRequest] = [
        {"id": str(block.get("id", "")), "name": str(block.get("name", "")), "arguments": block.get("input") or {}}
        for block in content
        if isinstance(block, dict) and block.get("type") == "tool_use"
    ]
    rest = [b for b in content if not (isinstance(b, dict) and b.get("type") in ("tool_result", "tool_use"))]
    if rest or calls:
        message: Message = {"role": role, "content": _text(rest) if rest else None}
        if calls:
            message["tool_calls"] = calls
        shown.append(message)
    return shown


def _text(content: Any) -> Any:
    """Text content as text: a string, or the texts of text blocks; other blocks stay as they are."""
    if not isinstance(content, list):
        return content
    if all(isinstance(block, dict) and block.get("type") == "text" for block in content):
        return "".join(str(block.get("text", "")) for block in content)
    return content
