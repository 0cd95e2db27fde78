"""Anthropic's Messages API as the fake speaks it: `POST /v1/messages`, whole or streamed.

Bodies, events and errors have the fields and wording Anthropic's own have (as its SDK parses them):
a streamed answer is `message_start` (with the input usage), a `ping`, each content block as
`content_block_start`, deltas (text in `chunk_size` pieces, a tool's input JSON in two) and
`content_block_stop`, then `message_delta` (stop reason, output usage) and `message_stop`. A `json`
reply is a `tool_use` of the tool the request forces (`tool_choice: {"type": "tool"}`), else text.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import orjson

from testkit.fake_provider import dialect
from testkit.fake_provider.dialect import Tokens, answer_text, call_id, chunks, halves, message_text, sse
from testkit.fake_provider.script import MISSING, Config, ErrorReply, Reply, RequestView

# The wording of Anthropic's own errors, by status: (message, type).
ERRORS: dict[int, tuple[str, str]] = {
    400: ("Invalid request.", "invalid_request_error"),
    401: ("invalid x-api-key", "authentication_error"),
    403: ("Your API key does not have permission to use the specified resource.", "permission_error"),
    404: ("Not found.", "not_found_error"),
    413: ("Request exceeds the maximum allowed number of bytes.", "request_too_large"),
    429: (
        "Number of request tokens has exceeded your per-minute rate limit "
        "(https://docs.anthropic.com/en/api/rate-limits); see the response headers for current usage. Please "
        "reduce the prompt length or the maximum tokens requested, or try again later.",
        "rate_limit_error",
    ),
    500: ("Internal server error", "api_error"),
    529: ("Overloaded", "overloaded_error"),
}


class AnthropicMessages:
    name = "anthropic.messages"
    path = "/v1/messages"

    def api_key(self, headers: Mapping[str, str]) -> str | None:
        # Older SDKs send `x-api-key`, newer ones `Authorization: Bearer`: the API takes both.
        scheme, _, token = headers.get("authorization", "").partition(" ")
        return headers.get("x-api-key") or (token.strip() if scheme.lower() == "bearer" else None) or None

    def view(self, body: dict[str, Any]) -> RequestView:
        messages = body.get("messages")
        if not isinstance(body.get("model"), str) or not isinstance(messages, list) or not messages:
            raise ValueError("messages: field required")
        if not isinstance(body.get("max_tokens"), int):
            raise ValueError("max_tokens: field required")
        system = message_text(body.get("system"))
        texts = [message_text(m.get("content")) if isinstance(m, dict) else "" for m in messages]
        choice = body.get("tool_choice")
        forced = choice.get("name") if isinstance(choice, dict) and choice.get("type") == "tool" else None
        tools = tuple(str(t.get("name")) for t in body.get("tools") or [] if isinstance(t, dict))
        return dialect.instructed_view(self.name, body, system, texts, tools, forced)

    def answer(self, reply: Reply, view: RequestView, number: int) -> dict[str, Any]:
        tokens = Tokens.of(reply, view, answer_text(reply))
        content: list[dict[str, Any]] = []
        for block in self._blocks(reply, view):
            if block[0] == "text":
                content.append({"type": "text", "text": block[1]})
            else:
                content.append({"type": "tool_use", "id": block[1], "name": block[2], "input": orjson.loads(block[3])})
        return {
            **self._message(reply, view, number, content),
            "stop_reason": _stop(reply, view),
            "usage": {**_input_usage(tokens), "output_tokens": tokens.output},
        }

    def stream(self, reply: Reply, view: RequestView, number: int, config: Config) -> Iterator[bytes]:
        tokens = Tokens.of(reply, view, answer_text(reply))
        started = {
            **self._message(reply, view, number, []),
            "stop_reason": None,
            "usage": {**_input_usage(tokens), "output_tokens": 1},
        }
        yield _event({"type": "message_start", "message": started})
        yield _event({"type": "ping"})
        for index, block in enumerate(self._blocks(reply, view)):
            if block[0] == "text":
                yield _event(
                    {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}
                )
                for piece in chunks(block[1], reply.chunk_size or config.chunk_size):
                    delta = {"type": "text_delta", "text": piece}
                    yield _event({"type": "content_block_delta", "index": index, "delta": delta})
            else:
                opened = {"type": "tool_use", "id": block[1], "name": block[2], "input": {}}
                yield _event({"type": "content_block_start", "index": index, "content_block": opened})
                for piece in halves(block[3]):
                    delta = {"type": "input_json_delta", "partial_json": piece}
                    yield _event({"type": "content_block_delta", "index": index, "delta": delta})
            yield _event({"type": "content_block_stop", "index": index})
        final = {"type": "message_delta", "delta": {"stop_reason": _stop(reply, view), "stop_sequence": None}}
        yield _event({**final, "usage": {"output_tokens": tokens.output}})
        yield _event({"type": "message_stop"})

    def error_body(self, error: ErrorReply, view: RequestView | None, request_id: str) -> dict[str, Any]:
        message, kind = ERRORS.get(error.status, ERRORS[500 if error.status >= 500 else 400])
        return {
            "type": "error",
            "error": {"type": error.type or kind, "message": error.message or message},
            "request_id": request_id,
        }

    def request_id_header(self) -> str:
        return "request-id"

    def unauthorized(self, key: str | None) -> ErrorReply:
        message = "x-api-key header is required" if key is None else "invalid x-api-key"  # its words for either header
        return ErrorReply(401, message, "authentication_error", None, None)

    def unknown_model(self, model: str) -> ErrorReply:
        return ErrorReply(404, f"model: {model}", "not_found_error", None, None)

    def unsupported(self, param: str, model: str) -> ErrorReply:
        return ErrorReply(400, f"{param}: Extra inputs are not permitted", "invalid_request_error", None, None)

    def _message(self, reply: Reply, view: RequestView, number: int, content: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "id": f"msg_fake{number:08d}",
            "type": "message",
            "role": "assistant",
            "model": reply.model or view.model,
            "content": content,
            "stop_sequence": None,
        }

    def _blocks(self, reply: Reply, view: RequestView) -> list[tuple[str, ...]]:
        """("text", text) and ("tool_use", id, name, input JSON) blocks, in the order Claude writes them."""
        blocks: list[tuple[str, ...]] = []
        if reply.text:
            blocks.append(("text", reply.text))
        if reply.json is not MISSING:
            answer = orjson.dumps(reply.json).decode()
            if view.forced_tool:
                blocks.append(("tool_use", f"toolu_fake{len(answer):06d}", view.forced_tool, answer))
            else:
                blocks.append(("text", answer))
        for index, call in enumerate(reply.tool_calls):
            blocks.append(("tool_use", call_id("toolu_", call, index), call.name, call.arguments))
        return blocks or [("text", "")]


def _stop(reply: Reply, view: RequestView) -> str:
    if reply.finish:
        return reply.finish
    return "tool_use" if reply.tool_calls or (reply.json is not MISSING and view.forced_tool) else "end_turn"


def _input_usage(tokens: Tokens) -> dict[str, Any]:
    return {
        "input_tokens": max(tokens.input - tokens.cached - tokens.cache_write, 0),
        "cache_creation_input_tokens": tokens.cache_write,
        "cache_read_input_tokens": tokens.cached,
        "service_tier": "standard",
    }


def _event(data: dict[str, Any]) -> bytes:
    return sse(orjson.dumps(data).decode(), event=str(data["type"]))
