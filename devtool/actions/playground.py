"""The playground: ask a model again with a recorded turn's messages, tools and parameters, edited.

A request names its model as `PROVIDER:MODEL` (`openai:...`, `anthropic:...`; none: `DEVTOOL_MODEL`),
and is made by the core providers' adapters (`devtool.core.providers`), which read their keys and base
URLs from the server's environment: no key is taken from the request, stored or shown. Parameters are
the ones that change an answer (`PARAMS`); the adapters' own options (a base URL, a key, a client)
cannot be set from a request, so a page cannot send the server's key elsewhere.

The call is made outside any run: nothing is journaled or traced, whether it succeeds or fails.
`PlaygroundError` says what is wrong with a request (`status` 400) or what the provider answered
(`status` 422: a missing key, an unknown model, a provider error), in words, never a 5xx.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from devtool.core.errors import CoreError
from devtool.core.jsonvalue import JSON, NotJSONError, json_copy
from devtool.core.model import Message, Model, ModelReply, ToolDefinition
from devtool.core.providers import MODEL_ENV

# What a playground request may set: what changes an answer, never where or as whom it is sent.
PARAMS = frozenset(
    {
        "temperature",
        "top_p",
        "top_k",
        "max_tokens",
        "max_completion_tokens",
        "seed",
        "stop",
        "stop_sequences",
        "presence_penalty",
        "frequency_penalty",
        "reasoning_effort",
    }
)
ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})
MAX_RUNS = 5
MAX_MODELS = 32
_models: dict[str, Model] = {}


class PlaygroundError(ValueError):
    """A playground request that cannot be made (400) or that the provider refused (422), in words."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class PlayRequest:
    """One checked playground request: messages, the model's name, parameters, tools, how many runs."""

    messages: list[Message]
    model: str
    params: dict[str, JSON]
    tools: list[ToolDefinition]
    runs: int = 1


@dataclass(frozen=True)
class PlayResult:
    """A model's answer: the message, its text, usage, cost (`{"micro_usd"}`, None: unknown), why it stopped."""

    message: Message
    text: str
    usage: dict[str, Any]
    costs: dict[str, float] | None
    finish_reason: str

    def as_json(self) -> dict[str, Any]:
        return {
            "message": self.message,
            "text": self.text,
            "usage": self.usage,
            "costs": self.costs,
            "finishReason": self.finish_reason,
        }


def parse_request(data: Any) -> PlayRequest:
    """`data` (the JSON a page or a client sent) as a request; `PlaygroundError` naming the bad field."""
    if not isinstance(data, dict):
        raise PlaygroundError("the request must be a JSON object with messages, model, params and tools")
    unknown = sorted(set(data) - {"messages", "model", "params", "tools", "runs", "schema"})
    if unknown:
        raise PlaygroundError(f"unknown field {unknown[0]!r}: a request has messages, model, params, tools, runs")
    model = data.get("model") or os.environ.get(MODEL_ENV, "").strip()
    if not isinstance(model, str) or not model.strip():
        raise PlaygroundError(f"model: name one as PROVIDER:MODEL (e.g. openai:gpt-4.1-mini), or set {MODEL_ENV}")
    runs = data.get("runs", 1)
    if type(runs) is not int or not 1 <= runs <= MAX_RUNS:
        raise PlaygroundError(f"runs: a whole number from 1 to {MAX_RUNS}, not {runs!r}")
    return PlayRequest(
        _messages(data.get("messages")), model.strip(), _params(data.get("params")), _tools(data.get("tools")), runs
    )


async def play(request: PlayRequest, progress: Callable[[str], None] | None = None) -> PlayResult:
    """Ask `request.model` once, its text pieces handed to `progress` as they stream in."""
    model = make_model(request.model, request.params)
    try:
        reply: ModelReply = await model.call(request.messages, schema=None, tools=request.tools, progress=progress)  # type: ignore[call-arg]
    except CoreError as exc:
        raise PlaygroundError(str(exc), 422) from None
    message = reply["message"]
    content = message.get("content")
    return PlayResult(
        message=message,
        text=content if isinstance(content, str) else "",
        usage=dict(reply.get("usage") or {}),
        costs=reply.get("costs"),
        finish_reason=str(reply.get("finishReason") or ""),
    )


def make_model(name: str, params: dict[str, JSON]) -> Model:
    """The adapter for `PROVIDER:MODEL` with `params` (no retries: an error is shown at once), made once
    per name and parameters, so its client's connections are reused; `PlaygroundError` for a name no
    provider has (400) or a missing SDK (422)."""
    key = json.dumps([name, params], sort_keys=True)
    found = _models.get(key)
    if found is None:
        found = _made(name, params)
        if len(_models) >= MAX_MODELS:
            _models.pop(next(iter(_models)))
        _models[key] = found
    return found


def _made(name: str, params: dict[str, JSON]) -> Model:
    provider, sep, model_id = name.partition(":")
    provider, model_id = provider.strip().lower(), model_id.strip()
    if not sep or not model_id:
        raise PlaygroundError(f"model {name!r} is not PROVIDER:MODEL: use e.g. openai:gpt-4.1-mini", 400)
    try:
        if provider == "openai":
            from devtool.core.providers.openai_chat import OpenAIChatModel

            return OpenAIChatModel(model_id, max_retries=0, **params)
        if provider == "anthropic":
            from devtool.core.providers.anthropic_messages import AnthropicModel

            return AnthropicModel(model_id, max_retries=0, **params)  # type: ignore[arg-type]
    except CoreError as exc:
        raise PlaygroundError(str(exc), 422) from None
    raise PlaygroundError(f"unknown model provider {provider!r} in {name!r}: the providers are openai, anthropic", 400)


def _messages(value: Any) -> list[Message]:
    if not isinstance(value, list) or not value:
        raise PlaygroundError("messages: a non-empty list of {role, content} objects")
    for index, message in enumerate(value):
        if not isinstance(message, dict):
            raise PlaygroundError(f"messages[{index}]: must be an object with a role and content")
        role = message.get("role")
        if role not in ROLES:
            raise PlaygroundError(f"messages[{index}].role: one of {', '.join(sorted(ROLES))}, not {role!r}")
        if "content" not in message and not message.get("tool_calls"):
            raise PlaygroundError(f"messages[{index}]: has no content")
    return _json(value, "messages")  # type: ignore[return-value]


def _params(value: Any) -> dict[str, JSON]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise PlaygroundError('params: an object, e.g. {"temperature": 0.2}')
    for name in value:
        if name not in PARAMS:
            raise PlaygroundError(
                f"params.{name}: not a parameter the playground sets (it sets {', '.join(sorted(PARAMS))})"
            )
    return _json(value, "params")  # type: ignore[return-value]


def _tools(value: Any) -> list[ToolDefinition]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise PlaygroundError("tools: a list of {name, description, parameters}")
    for index, tool in enumerate(value):
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str) or not tool["name"]:
            raise PlaygroundError(f"tools[{index}]: an object with a name")
        if not isinstance(tool.get("parameters", {}), dict):
            raise PlaygroundError(f"tools[{index}].parameters: a JSON schema object")
    copied: list[dict[str, Any]] = _json(value, "tools")  # type: ignore[assignment]
    return [
        {
            "name": t["name"],
            "description": str(t.get("description") or ""),
            "parameters": t.get("parameters") or {"type": "object"},
        }
        for t in copied
    ]


def _json(value: Any, where: str) -> JSON:
    try:
        return json_copy(value, where)
    except NotJSONError as exc:
        raise PlaygroundError(str(exc)) from None
