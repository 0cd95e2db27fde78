"""`AnthropicModel`: Claude through Anthropic's Messages API and the official `anthropic` SDK.

Our conversation becomes Messages' shape: system messages go to `system`; an assistant's tool calls
become `tool_use` blocks and the tool results that follow one `user` message of `tool_result`
blocks; messages of one role in a row are merged (the API alternates roles). A `schema` is asked for
as a forced tool (`ANSWER_TOOL`, its input schema the schema): alone it is the tool the model must
call; beside the agent's own tools the model must call one of them (`tool_choice: any`), and calling
this one is the final answer, which comes back as JSON text like any other model's. Answers stream;
`usage.promptTokens` counts every input token (fresh, cache reads and cache writes), and
`usage.details` says how many were cache reads and writes. `max_tokens`, which the API requires, is
`DEFAULT_MAX_TOKENS` unless given (then it is a param, hashed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Final

import orjson

from devtool.core.errors import ModelError
from devtool.core.jsonvalue import JSON
from devtool.core.model import Message, Progress, ToolCallRequest, ToolDefinition, Usage
from devtool.core.providers.adapter import Answer, ProviderModel

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic
    from anthropic.types import MessageDeltaUsage
    from anthropic.types import Usage as AnthropicUsage

ANSWER_TOOL: Final = "final_answer"
DEFAULT_MAX_TOKENS: Final = 4096
FINISH_REASONS: Final = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}


class AnthropicModel(ProviderModel):
    """A Claude model: `AnthropicModel("claude-sonnet-4-5", max_tokens=2048)`."""

    PROVIDER: ClassVar[str] = "anthropic"
    SDK: ClassVar[str] = "anthropic"
    CLIENT: ClassVar[str] = "AsyncAnthropic"
    BASE_ERROR: ClassVar[str] = "AnthropicError"
    NOT_HASHED: ClassVar[frozenset[str]] = ProviderModel.NOT_HASHED | {"service_tier"}

    async def _ask(
        self,
        client: AsyncAnthropic,
        messages: list[Message],
        schema: dict[str, JSON] | None,
        tools: list[ToolDefinition],
        progress: Progress | None,
    ) -> Answer:
        request = self._request(messages, schema, tools)
        if not self.streams:
            reply = await client.messages.create(**self.keywords(type(client.messages).create, request))
            blocks: list[dict[str, Any]] = []
            for block in reply.content:
                if block.type == "text":
                    blocks.append({"type": "text", "text": block.text})
                elif block.type == "tool_use":
                    arguments = orjson.dumps(block.input).decode()
                    blocks.append({"type": "tool_use", "id": block.id, "name": block.name, "json": arguments})
            return messages_answer(blocks, reply.stop_reason, _usage(reply.usage, None), reply.model)
        blocks = []
        stop: str | None = None
        started: AnthropicUsage | None = None
        final: MessageDeltaUsage | None = None
        served: str | None = None
        stream = await client.messages.create(**self.keywords(type(client.messages).create, request), stream=True)
        async with stream:
            async for event in stream:
                if event.type == "content_block_delta":
                    delta = event.delta
                    if delta.type == "text_delta":
                        blocks[-1]["text"] += delta.text
                        if progress is not None:
                            progress(delta.text)
                    elif delta.type == "input_json_delta":
                        blocks[-1]["json"] += delta.partial_json
                elif event.type == "content_block_start":
                    block = event.content_block
                    if block.type == "tool_use":
                        blocks.append({"type": "tool_use", "id": block.id, "name": block.name, "json": ""})
                    else:
                        blocks.append({"type": block.type, "text": getattr(block, "text", "") or ""})
                elif event.type == "message_start":
                    started, served = event.message.usage, event.message.model
                elif event.type == "message_delta":
                    stop, final = event.delta.stop_reason or stop, event.usage
        return messages_answer(blocks, stop, _usage(started, final) if started is not None else None, served)

    def _request(
        self, messages: list[Message], schema: dict[str, JSON] | None, tools: list[ToolDefinition]
    ) -> dict[str, Any]:
        system = [_plain(m.get("content")) for m in messages if m["role"] == "system"]
        request: dict[str, Any] = {
            "max_tokens": DEFAULT_MAX_TOKENS,
            **self.request_params,
            "model": self.id,
            "messages": _wire_messages([m for m in messages if m["role"] != "system"]),
        }
        if system:
            request["system"] = "\n\n".join(system)
        offered = [{"name": t["name"], "description": t["description"], "input_schema": t["parameters"]} for t in tools]
        if schema is not None:
            if any(t["name"] == ANSWER_TOOL for t in tools):
                raise ModelError(f"a tool named {ANSWER_TOOL!r} cannot be used with a schema on an anthropic model")
            offered.append(
                {
                    "name": ANSWER_TOOL,
                    "description": "Give your final answer, matching this schema.",
                    "input_schema": schema,
                }
            )
            request["tool_choice"] = {"type": "any"} if tools else {"type": "tool", "name": ANSWER_TOOL}
        if offered:
            request["tools"] = offered
        return request


def messages_answer(blocks: list[dict[str, Any]], stop: str | None, usage: Usage | None, served: str | None) -> Answer:
    """A Messages answer (its blocks: `{"type": "text", "text"}` and `{"type": "tool_use", "id", "name",
    "json"}` with the input as JSON text; its stop reason, usage and served model) as our message: what
    the adapter and the SDK instrumentation (`devtool.instrument`) both make of one."""
    text = "".join(block["text"] for block in blocks if block["type"] == "text")
    uses = [block for block in blocks if block["type"] == "tool_use"]
    calls: list[ToolCallRequest] = [
        {"id": block["id"], "name": block["name"], "arguments": block["json"] or "{}"}
        for block in uses
        if block["name"] != ANSWER_TOOL
    ]
    finish = FINISH_REASONS.get(stop or "", "unknown")
    answered = next((block["json"] or "{}" for block in uses if block["name"] == ANSWER_TOOL), None)
    if answered is not None and not calls:
        # The forced tool's input is the answer: JSON text, as a model answering in words gives it.
        return Answer({"role": "assistant", "content": answered}, usage, "stop", served)
    message: Message = {"role": "assistant", "content": text if text or not calls else None}
    if calls:
        message["tool_calls"] = calls
    return Answer(message, usage, finish, served)


def _usage(started: AnthropicUsage, final: MessageDeltaUsage | None) -> Usage:
    """Tokens from `message_start` (input, cache) and the last `message_delta` (output, final counts)."""
    fresh = (final.input_tokens if final and final.input_tokens is not None else None) or started.input_tokens
    read = (final.cache_read_input_tokens if final else None) or started.cache_read_input_tokens or 0
    written = (final.cache_creation_input_tokens if final else None) or started.cache_creation_input_tokens or 0
    output = final.output_tokens if final is not None else started.output_tokens
    details = final.output_tokens_details if final is not None else started.output_tokens_details
    return messages_usage(fresh, read, written, output, details.thinking_tokens if details is not None else 0)


def messages_usage(fresh: int, read: int, written: int, output: int, thinking: int) -> Usage:
    """Messages' token counts (uncached input, cache reads, cache writes, output, thinking) as our usage:
    `promptTokens` counts every input token."""
    prompt = fresh + read + written
    usage: Usage = {"promptTokens": prompt, "completionTokens": output, "totalTokens": prompt + output}
    if read or written or thinking:
        usage["details"] = {}
        if read:
            usage["details"]["cacheReadTokens"] = read
        if written:
            usage["details"]["cacheWriteTokens"] = written
        if thinking:
            usage["details"]["reasoningTokens"] = thinking
    return usage


def _wire_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """Our conversation as alternating user/assistant messages of content blocks."""
    wire: list[dict[str, Any]] = []
    for message in messages:
        role = "assistant" if message["role"] == "assistant" else "user"
        blocks = _blocks(message)
        if not blocks:
            continue
        if wire and wire[-1]["role"] == role:
            wire[-1]["content"].extend(blocks)
        else:
            wire.append({"role": role, "content": blocks})
    return wire


def _blocks(message: Message) -> list[dict[str, Any]]:
    content = message.get("content")
    if message["role"] == "tool":
        return [{"type": "tool_result", "tool_use_id": message.get("tool_call_id", ""), "content": _plain(content)}]
    blocks: list[dict[str, Any]]
    if isinstance(content, list) and all(isinstance(part, dict) and "type" in part for part in content):
        blocks = [dict(part) for part in content]  # type: ignore[arg-type]
    else:
        text = _plain(content)
        blocks = [{"type": "text", "text": text}] if text else []
    for call in message.get("tool_calls", []):
        blocks.append({"type": "tool_use", "id": call["id"], "name": call["name"], "input": _input(call["arguments"])})
    return blocks


def _input(arguments: str | dict[str, JSON]) -> Any:
    if isinstance(arguments, dict):
        return arguments
    try:
        parsed = orjson.loads(arguments) if arguments.strip() else {}
    except orjson.JSONDecodeError:
        parsed = None
    return parsed if isinstance(parsed, dict) else {"$unparsedArguments": arguments}


def _plain(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return orjson.dumps(content).decode()
