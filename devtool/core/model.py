"""The model protocol every adapter implements, and `ScriptedModel`, the deterministic one.

A model takes the conversation, an optional JSON schema for the final answer and the tool
definitions, and returns an assistant message (which may ask for tool calls) with token usage and
its cost (`None` when the price is unknown). A model that streams says so (`streams = True`) and
takes `progress=`, a function it calls with each piece of the answer's text as it arrives. A model
whose answers also depend on settings (temperature, max tokens, ...) names them in `params`, which
the content hash covers. The real adapters are in `devtool.core.providers`.

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


class UsageDetails(TypedDict, total=False):
    """Token counts beyond prompt and completion, named as the TypeScript library's `TokenUsage.details`."""

    cacheReadTokens: int
    cacheWriteTokens: int
    reasoningTokens: int


class Usage(TypedDict):
    """Tokens of one model request. `promptTokens` counts every input token, cached ones included."""

    promptTokens: int
    completionTokens: int
    totalTokens: int
    details: NotRequired[UsageDetails]


# What a request whose server counted no tokens used, as far as anyone knows (its cost is None, unknown).
NO_USAGE: Usage = {"promptTokens": 0, "completionTokens": 0, "totalTokens": 0}


class ModelReply(TypedDict):
    message: Message
    usage: Usage
    # Amounts per billing unit (`{"micro_usd": 1234}`, integers); None when the price is unknown.
    costs: NotRequired[dict[str, float] | None]
    # Why the model stopped: stop, length, tool_calls, content_filter (the TypeScript library's names).
    finishReason: NotRequired[str]


# Called by a streaming model with each piece of the answer's text, as it arrives.
Progress = Callable[[str], None]


@runtime_checkable
class Model(Protocol):
    """What `prompt()` needs of a model: an identity (part of the content hash) and one async call.

    Optional, read with `getattr`: `streams` (true when `call` takes `progress=`) and `params`
    (the settings that change its answers, part of the content hash).
    """

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
    demos of a live run. Usage is counted in a fixed, deterministic way (4 characters a token), and
    costs `micro_usd_per_token` a token, rounded to whole micro-dollars (billing units are integers).
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
            "costs": {"micro_usd": round(total * self.micro_usd_per_token)},
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


def model_identity(model: Model) -> dict[str, JSON]:
    """What the content hash of a prompt knows of its model: id, provider, and `params` when it has any.

    A model without params hashes as `{"id", "provider"}`, as DESIGN.md fixes it, so journals recorded
    before params existed still replay. Neither a base URL nor a key is part of it: a run recorded
    through a proxy replays against the same journal.
    """
    identity: dict[str, JSON] = {"id": model.id, "provider": model.provider}
    params = getattr(model, "params", None)
    if params:
        identity["params"] = dict(params)
    return identity


def _tokens(content: Any) -> int:
    if content is None:
        return 0
    text = content if isinstance(content, str) else repr(content)
    return max(1, (len(text) + 3) // 4)
