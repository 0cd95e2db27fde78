"""OpenAI's Chat Completions (`POST .../chat/completions`), as the instrumentation reads it.

Messages are nearly ours already: a tool call's `function` is flattened to `{id, name, arguments}`. A
JSON-schema `response_format` is the turn's schema. A streamed answer is `chat.completion.chunk` events
and `[DONE]`; its text, tool-call pieces, finish reason and usage chunk are put together as the adapter
puts together its own (`chat_answer`, `chat_usage`).
"""

from __future__ import annotations

from typing import Any, ClassVar

from devtool.core.model import Message, ToolCallRequest, Usage
from devtool.core.providers.adapter import Answer
from devtool.core.providers.openai_chat import OpenAIChatModel, chat_answer, chat_usage
from devtool.instrument.api import Shown, payloads, tool_definition


class ChatCompletions:
    name: ClassVar[str] = "openai.chat"
    provider: ClassVar[str] = "openai"
    path: ClassVar[str] = "/chat/completions"
    not_hashed: ClassVar[frozenset[str]] = OpenAIChatModel.NOT_HASHED

    def shown(self, body: dict[str, Any]) -> Shown:
        messages = [_message(m) for m in body.get("messages") or () if type(m) is dict]
        tools = []
        if wired := body.get("tools"):
            tools = [
                tool_definition(f.get("name"), f.get("description"), f.get("parameters"))
                for t in wired
                if isinstance(t, dict) and isinstance(f := t.get("function"), dict)
            ]
        form = body.get("response_format")
        schema = None
        if isinstance(form, dict) and form.get("type") == "json_schema" and isinstance(form.get("json_schema"), dict):
            schema = form["json_schema"].get("schema")
        return Shown(messages, tools, schema)

    def answer(self, body: dict[str, Any]) -> Answer:
        choice = (body.get("choices") or [{}])[0]
        message = choice.get("message") or {}
        calls = []
        if wired := message.get("tool_calls"):
            calls = [
                (call.get("id"), call["function"].get("name", ""), call["function"].get("arguments", ""))
                for call in wired
                if isinstance(call.get("function"), dict)
            ]
        text = message.get("content") or message.get("refusal")
        usage = usage_of(body.get("usage"))
        return chat_answer([text] if text else [], calls, choice.get("finish_reason"), usage, body.get("model"))

    def reader(self) -> ChunkReader:
        return ChunkReader()


class ChunkReader:
    """A streamed Chat Completion, chunk by chunk."""

    __slots__ = ("_calls", "_finish", "_pieces", "_served", "_usage", "complete")

    def __init__(self) -> None:
        self._pieces: list[str] = []
        self._calls: dict[int, list[Any]] = {}
        self._finish: str | None = None
        self._usage: Usage | None = None
        self._served: str | None = None
        self.complete = False

    def read(self, events: list[tuple[str | None, str]], pieces: list[str]) -> None:
        datas = [data for _, data in events]
        if "[DONE]" in datas:
            datas = [data for data in datas if data != "[DONE]"]
            self.complete = True
        chunks, error = payloads(datas)
        calls = self._calls
        for chunk in chunks:
            if served := chunk.get("model"):
                self._served = served
            if usage := chunk.get("usage"):
                self._usage = usage_of(usage)
            text = None
            for choice in chunk.get("choices") or ():
                delta = choice.get("delta") or {}
                if piece := delta.get("content") or delta.get("refusal"):
                    self._pieces.append(piece)
                    text = piece
                for call in delta.get("tool_calls") or ():
                    entry = calls.setdefault(call.get("index", 0), [None, "", []])
                    entry[0] = call.get("id") or entry[0]
                    function = call.get("function") or {}
                    entry[1] += function.get("name") or ""
                    if function.get("arguments"):
                        entry[2].append(function["arguments"])
                self._finish = choice.get("finish_reason") or self._finish
            if text:
                pieces.append(text)
        if error is not None:
            raise error

    def answer(self) -> Answer:
        calls = [(c[0], c[1], "".join(c[2])) for _, c in sorted(self._calls.items())]
        return chat_answer(self._pieces, calls, self._finish, self._usage, self._served)


def usage_of(usage: Any) -> Usage | None:
    """Chat Completions' `usage` object as ours (None: the server sent none)."""
    if not isinstance(usage, dict):
        return None
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
    reasoning = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens")
    prompt, completion = usage.get("prompt_tokens") or 0, usage.get("completion_tokens") or 0
    return chat_usage(prompt, completion, usage.get("total_tokens"), cached, reasoning)


def _message(wire: dict[str, Any]) -> Message:
    message: Message = {"role": str(wire.get("role", "user")), "content": wire.get("content")}
    if wired := wire.get("tool_calls"):
        calls: list[ToolCallRequest] = [
            {
                "id": str(call.get("id", "")),
                "name": str(function.get("name", "")),
                "arguments": function.get("arguments", ""),
            }
            for call in wired
            if isinstance(call, dict) and isinstance(function := call.get("function"), dict)
        ]
        if calls:
            message["tool_calls"] = calls
    if "tool_call_id" in wire:
        message["tool_call_id"] = str(wire["tool_call_id"])
    return message
