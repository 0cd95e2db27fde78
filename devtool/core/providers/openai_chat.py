"""`OpenAIChatModel`: any server that speaks OpenAI's Chat Completions, through the official `openai` SDK.

OpenAI itself, Azure OpenAI (pass `client=AsyncAzureOpenAI(...)`), and the servers that copy its API
(vLLM, Ollama, LM Studio, OpenRouter, ...: set `OPENAI_BASE_URL` or `base_url=`; a server that needs
no key still takes any `OPENAI_API_KEY`). Messages go as they are; a tool call's arguments as JSON
text; tools as functions, so the model may ask for several at once. A `schema` goes as a JSON-schema
response format, strict when the schema allows it (every object closed and all its properties
required), else not; a server that refuses that format is asked in words instead, from then on, and
the answer is validated all the same by `prompt()`. Answers stream (`stream_options.include_usage`
for the usage at the end); cached prompt tokens and reasoning tokens go into `usage.details`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import orjson

from devtool.core.jsonvalue import JSON
from devtool.core.model import Message, Progress, ToolCallRequest, ToolDefinition, Usage
from devtool.core.providers.adapter import Answer, ProviderModel

if TYPE_CHECKING:
    from openai import AsyncOpenAI
    from openai.types.completion_usage import CompletionUsage

FINISH_REASONS = {"stop": "stop", "length": "length", "tool_calls": "tool_calls", "content_filter": "content_filter"}


class OpenAIChatModel(ProviderModel):
    """A Chat Completions model: `OpenAIChatModel("gpt-4.1-mini", temperature=0)`."""

    PROVIDER: ClassVar[str] = "openai"
    SDK: ClassVar[str] = "openai"
    CLIENT: ClassVar[str] = "AsyncOpenAI"
    BASE_ERROR: ClassVar[str] = "OpenAIError"
    NOT_HASHED: ClassVar[frozenset[str]] = ProviderModel.NOT_HASHED | {
        "store",
        "service_tier",
        "safety_identifier",
        "prompt_cache_key",
        "prompt_cache_retention",
    }

    def __init__(self, model: str, **options: Any) -> None:
        super().__init__(model, **options)
        # "json_schema" until a server refuses it; then the schema is asked for in words.
        self.schema_mode = "json_schema"

    async def _ask(
        self,
        client: AsyncOpenAI,
        messages: list[Message],
        schema: dict[str, JSON] | None,
        tools: list[ToolDefinition],
        progress: Progress | None,
    ) -> Answer:
        mode = self.schema_mode
        try:
            return await self._send(client, self._request(messages, schema, tools, mode), progress)
        except self.sdk().BadRequestError as exc:
            if schema is None or mode != "json_schema" or not _refuses_response_format(exc):
                raise
        self.schema_mode = "instructions"
        return await self._send(client, self._request(messages, schema, tools, "instructions"), progress)

    def _request(
        self, messages: list[Message], schema: dict[str, JSON] | None, tools: list[ToolDefinition], mode: str
    ) -> dict[str, Any]:
        wire = [_wire_message(message) for message in messages]
        request: dict[str, Any] = {**self.request_params, "model": self.id}
        if tools:
            request["tools"] = [
                {
                    "type": "function",
                    "function": {"name": t["name"], "description": t["description"], "parameters": t["parameters"]},
                }
                for t in tools
            ]
        if schema is not None and mode == "json_schema":
            request["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": schema, "strict": _strict_ready(schema)},
            }
        elif schema is not None:
            wire = _with_instruction(wire, schema)
        request["messages"] = wire
        return request

    async def _send(self, client: AsyncOpenAI, request: dict[str, Any], progress: Progress | None) -> Answer:
        if not self.streams:
            completion = await client.chat.completions.create(**self.keywords(_create(client), request))
            choice = completion.choices[0]
            calls = [
                (call.id, call.function.name, call.function.arguments)
                for call in choice.message.tool_calls or ()
                if call.type == "function"
            ]
            text = choice.message.content or choice.message.refusal
            return chat_answer(
                [text] if text else [], calls, choice.finish_reason, _usage(completion.usage), completion.model
            )
        pieces: list[str] = []
        calls_by_index: dict[int, list[Any]] = {}
        finish: str | None = None
        usage: CompletionUsage | None = None
        served: str | None = None
        stream = await client.chat.completions.create(**request, stream=True, stream_options={"include_usage": True})
        async with stream:
            async for chunk in stream:
                served = chunk.model or served
                if chunk.usage is not None:
                    usage = chunk.usage
                for choice in chunk.choices:
                    delta = choice.delta
                    if piece := delta.content or delta.refusal:
                        pieces.append(piece)
                        if progress is not None:
                            progress(piece)
                    for call in delta.tool_calls or ():
                        entry = calls_by_index.setdefault(call.index, [None, "", []])
                        entry[0] = call.id or entry[0]
                        if call.function is not None:
                            entry[1] += call.function.name or ""
                            if call.function.arguments:
                                entry[2].append(call.function.arguments)
                    finish = choice.finish_reason or finish
        calls = [(c[0], c[1], "".join(c[2])) for _, c in sorted(calls_by_index.items())]
        return chat_answer(pieces, calls, finish, _usage(usage), served)


def chat_answer(
    pieces: list[str],
    calls: list[tuple[str | None, str, str]],
    finish: str | None,
    usage: Usage | None,
    served: str | None,
) -> Answer:
    """A Chat Completions answer (its text pieces, its tool calls as (id, name, arguments JSON text), why
    it stopped, its usage, the model that served it) as our message: what the adapter and the SDK
    instrumentation (`devtool.instrument`) both make of one."""
    message: Message = {"role": "assistant", "content": "".join(pieces) if pieces or not calls else None}
    if calls:
        requests: list[ToolCallRequest] = [
            {"id": call_id or f"call_{index}", "name": name, "arguments": arguments}
            for index, (call_id, name, arguments) in enumerate(calls)
        ]
        message["tool_calls"] = requests
    return Answer(message, usage, FINISH_REASONS.get(finish or "", "unknown"), served)


def chat_usage(prompt: int, completion: int, total: int | None, cached: int | None, reasoning: int | None) -> Usage:
    """Chat Completions' token counts (`prompt_tokens`, `completion_tokens`, `total_tokens`, cached prompt
    tokens, reasoning tokens) as our usage; OpenAI's Responses API counts the same way."""
    counted: Usage = {
        "promptTokens": prompt,
        "completionTokens": completion,
        "totalTokens": total or prompt + completion,
    }
    if cached or reasoning:
        counted["details"] = {}
        if cached:
            counted["details"]["cacheReadTokens"] = cached
        if reasoning:
            counted["details"]["reasoningTokens"] = reasoning
    return counted


def _usage(usage: CompletionUsage | None) -> Usage | None:
    if usage is None:
        return None
    cached = usage.prompt_tokens_details.cached_tokens if usage.prompt_tokens_details else None
    reasoning = usage.completion_tokens_details.reasoning_tokens if usage.completion_tokens_details else None
    return chat_usage(usage.prompt_tokens, usage.completion_tokens, usage.total_tokens, cached, reasoning)


def _wire_message(message: Message) -> dict[str, Any]:
    """Our message as Chat Completions takes it: tool calls as functions, JSON content as text."""
    content = message.get("content")
    wire: dict[str, Any] = {"role": message["role"], "content": _text(content)}
    if calls := message.get("tool_calls"):
        wire["tool_calls"] = [
            {
                "id": call["id"],
                "type": "function",
                "function": {"name": call["name"], "arguments": _text(call["arguments"])},
            }
            for call in calls
        ]
    if "tool_call_id" in message:
        wire["tool_call_id"] = message["tool_call_id"]
    return wire


def _text(value: Any) -> Any:
    """Text stays text, content parts (a list of objects) stay parts, None stays None; other JSON is dumped."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(part, dict) and "type" in part for part in value):
        return value
    return orjson.dumps(value).decode()


def _strict_ready(schema: dict[str, JSON]) -> bool:
    """Whether OpenAI's strict mode takes `schema`: an object at the top, every object closed with all its
    properties required (strict mode's rules; a schema that breaks them goes non-strict instead)."""

    def closed(node: JSON) -> bool:
        if isinstance(node, list):
            return all(closed(item) for item in node)
        if not isinstance(node, dict):
            return True
        if node.get("type") == "object" or "properties" in node:
            properties = node.get("properties") or {}
            required = node.get("required") or []
            if node.get("additionalProperties") is not False or not isinstance(properties, dict):
                return False
            if not isinstance(required, list) or set(required) != set(properties):
                return False
        return all(closed(value) for value in node.values())

    return schema.get("type") == "object" and closed(schema)


def _with_instruction(wire: list[dict[str, Any]], schema: dict[str, JSON]) -> list[dict[str, Any]]:
    """The conversation with the schema asked for in words, in its (first) system message."""
    instruction = (
        "Answer with one JSON value and nothing else (no prose, no code fence) that matches this JSON schema: "
        + orjson.dumps(schema).decode()
    )
    if wire and wire[0]["role"] == "system" and isinstance(wire[0]["content"], str):
        return [{**wire[0], "content": f"{wire[0]['content']}\n\n{instruction}"}, *wire[1:]]
    return [{"role": "system", "content": instruction}, *wire]


def _create(client: AsyncOpenAI) -> Any:
    """The SDK's `create`, unbound: the same function for every client, so its keywords are read once."""
    return type(client.chat.completions).create


def _refuses_response_format(exc: Exception) -> bool:
    """A 400 about the JSON-schema response format: a server without structured outputs."""
    text = f"{getattr(exc, 'param', '')} {getattr(exc, 'message', '')}".lower()
    return "response_format" in text or "json_schema" in text
