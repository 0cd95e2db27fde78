"""The model protocol every adapter implements, and `ScriptedModel`, the deterministic one.

A model takes the conversation, an optional JSON schema for the final answer and the tool
definitions, and returns an assistant message (which may ask for tool calls) with token usage.
No model is reachable from a test or a demo, so `ScriptedModel` answers from a script and counts
the requests it answered: a replay that hits the journal leaves `.calls` at zero.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any, NotRequired, Protocol, TypedDict, runtime_checkable

from devtool.core.errors import ModelError
from devtool.core.jsonvalue import JSON, content_hash, describe


class ToolCallRequest(TypedDict):
    id: str
    name: str
    arguments: str | dict[str, JSON]


class Message(TypedDict):
    role: str
    content: JSON
    tool_calls: NotRequired[list[ToolCallRequest]]
    tool_call_id: NotRequired[str]


class ToolDefinition(TypedDict):
    name: str
    description: str
    parameters: dict[str, JSON]


class Usage(TypedDict):
    promptTokens: int
    completionTokens: int
    totalTokens: int


class ModelReply(TypedDict):
    message: Message
    usage: Usage
    costs: NotRequired[dict[str, float]]


@runtime_checkable
class Model(Protocol):
    """What `prompt()` needs of a model: an identity (part of the content hash) and one async call."""

    id: str
    provider: str

    async def call(
        self,
        messages: Sequence[Message],
        *,
        schema: dict[str, JSON] | None,
        tools: Sequence[ToolDefinition],
    ) -> ModelReply: ...


Answer = str | dict[str, Any]
Script = Sequence[Answer] | Callable[[list[Message]], Answer]


class ScriptedModel:
    """A model that answers from a script, in order, or from a function of the messages.

    An answer is a string (the assistant's text) or an assistant message dict, which may carry
    `tool_calls` (`[{"name": ..., "arguments": {...}}]`; ids are filled in when missing). Running
    out of answers raises `ModelError`. `delay` (seconds) makes each answer take that long, for
    demos of a live run. Usage is counted in a fixed, deterministic way (4 characters a token).
    """

    def __init__(
        self,
        responses: Script,
        *,
        id: str = "scripted-model",
        provider: str = "scripted",
        delay: float = 0.0,
        micro_usd_per_token: float = 1.0,
    ) -> None:
        self.id = id
        self.provider = provider
        self.delay = delay
        self.micro_usd_per_token = micro_usd_per_token
        self.calls = 0
        self._script = responses
        self._next = 0

    async def call(
        self,
        messages: Sequence[Message],
        *,
        schema: dict[str, JSON] | None,
        tools: Sequence[ToolDefinition],
    ) -> ModelReply:
        if self.delay:
            await asyncio.sleep(self.delay)
        message = self._message(self._answer(list(messages)))
        self.calls += 1
        prompt_tokens = sum(_tokens(m.get("content")) for m in messages)
        completion_tokens = _tokens(message.get("content")) + sum(
            _tokens(call["arguments"]) for call in message.get("tool_calls", [])
        )
        total = prompt_tokens + completion_tokens
        return {
            "message": message,
            "usage": {"promptTokens": prompt_tokens, "completionTokens": completion_tokens, "totalTokens": total},
            "costs": {"micro_usd": round(total * self.micro_usd_per_token, 3)},
        }

    def _answer(self, messages: list[Message]) -> Answer:
        if callable(self._script):
            return self._script(messages)
        if self._next >= len(self._script):
            raise ModelError(
                f"ScriptedModel {self.id!r} has no answer left: its script had {len(self._script)} "
                f"and this is request {self._next + 1}"
            )
        answer = self._script[self._next]
        self._next += 1
        return answer

    def _message(self, answer: Answer) -> Message:
        if isinstance(answer, str):
            return {"role": "assistant", "content": answer}
        if not isinstance(answer, dict):
            raise ModelError(f"ScriptedModel answers are strings or message dicts, got {type(answer).__name__}")
        message: Message = {"role": "assistant", "content": answer.get("content")}
        if calls := answer.get("tool_calls"):
            # Ids follow from the answer itself: the same script gives the same ids in a replay, so a
            # replayed conversation hashes the same as the recorded one.
            digest = content_hash(describe([[call.get("name"), call.get("arguments")] for call in calls]))
            message["tool_calls"] = [
                {
                    "id": call.get("id") or f"call_{digest[:12]}_{index}",
                    "name": call["name"],
                    "arguments": call.get("arguments", {}),
                }
                for index, call in enumerate(calls)
            ]
        return message

    def __repr__(self) -> str:
        return f"ScriptedModel(id={self.id!r}, calls={self.calls})"


def _tokens(content: Any) -> int:
    if content is None:
        return 0
    text = content if isinstance(content, str) else repr(content)
    return max(1, (len(text) + 3) // 4)
