"""OpenAI's Chat Completions as the fake speaks it: `POST /v1/chat/completions`, whole or streamed.

Bodies, chunks and errors have the fields and wording OpenAI's own have (as its SDK parses them): a
streamed answer is a role chunk, text in `chunk_size` pieces, each tool call as a chunk with its id
and name then its arguments in two pieces, a chunk with the finish reason, the usage chunk when
`stream_options.include_usage` asks for it, and `[DONE]`. A `json` reply is the message's content.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import Any

import orjson

from testkit.fake_provider.dialect import Tokens, answer_text, call_id, chunks, halves, message_text, sse
from testkit.fake_provider.script import MISSING, Config, ErrorReply, Reply, RequestView

# The wording of OpenAI's own errors, by status: (message, type, code).
ERRORS: dict[int, tuple[str, str, str | None]] = {
    400: ("Invalid request.", "invalid_request_error", None),
    401: ("Incorrect API key provided.", "invalid_request_error", "invalid_api_key"),
    403: ("You are not allowed to sample from this model", "invalid_request_error", None),
    404: ("The model does not exist or you do not have access to it.", "invalid_request_error", "model_not_found"),
    429: (
        "Rate limit reached for requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20s. "
        "Visit https://platform.openai.com/account/rate-limits to learn more.",
        "requests",
        "rate_limit_exceeded",
    ),
    500: ("The server had an error while processing your request. Sorry about that!", "server_error", None),
    503: ("The engine is currently overloaded, please try again later.", "server_error", None),
}


class OpenAIChat:
    name = "openai.chat"
    path = "/v1/chat/completions"

    def api_key(self, headers: Mapping[str, str]) -> str | None:
        scheme, _, key = headers.get("authorization", "").partition(" ")
        return key.strip() if scheme.lower() == "bearer" and key.strip() else None

    def view(self, body: dict[str, Any]) -> RequestView:
        messages = body.get("messages")
        if not isinstance(body.get("model"), str) or not isinstance(messages, list) or not messages:
            raise ValueError("you must provide a model parameter and a non-empty messages array")
        texts = [message_text(m.get("content")) if isinstance(m, dict) else "" for m in messages]
        for message in messages:
            for call in (message.get("tool_calls") or []) if isinstance(message, dict) else []:
                texts.append(message_text(call.get("function", {}).get("arguments")))
        tools = tuple(
            str(tool.get("function", {}).get("name"))
            for tool in body.get("tools") or []
            if isinstance(tool, dict) and isinstance(tool.get("function"), dict)
        )
        choice = body.get("tool_choice")
        forced = choice.get("function", {}).get("name") if isinstance(choice, dict) else None
        options = body.get("stream_options")
        return RequestView(
            api=self.name,
            model=body["model"],
            stream=body.get("stream") is True,
            text="\n".join(texts),
            last=texts[len(messages) - 1],
            tools=tools,
            forced_tool=forced,
            params=frozenset(body),
            include_usage=isinstance(options, dict) and options.get("include_usage") is True,
        )

    def answer(self, reply: Reply, view: RequestView, number: int) -> dict[str, Any]:
        calls = self._calls(reply)
        message: dict[str, Any] = {
            "role": "assistant",
            "content": _content(reply),
            "refusal": None,
            "annotations": [],
        }
        if calls:
            message["tool_calls"] = [
                {"id": cid, "type": "function", "function": {"name": name, "arguments": arguments}}
                for cid, name, arguments in calls
            ]
        return {
            **self._head(reply, view, number, "chat.completion"),
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": _finish(reply)}],
            "usage": _usage(Tokens.of(reply, view, answer_text(reply))),
            "service_tier": "default",
        }

    def stream(self, reply: Reply, view: RequestView, number: int, config: Config) -> Iterator[bytes]:
        head = self._head(reply, view, number, "chat.completion.chunk")
        extra = {"usage": None} if view.include_usage else {}

        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            return sse(orjson.dumps({**head, "choices": [choice], **extra}).decode())

        calls = self._calls(reply)
        text = _content(reply)
        yield chunk({"role": "assistant", "content": "" if text is not None else None, "refusal": None})
        for piece in chunks(text or "", reply.chunk_size or config.chunk_size):
            yield chunk({"content": piece})
        for index, (cid, name, arguments) in enumerate(calls):
            first = {"index": index, "id": cid, "type": "function", "function": {"name": name, "arguments": ""}}
            yield chunk({"tool_calls": [first]})
            for piece in halves(arguments):
                yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
        yield chunk({}, _finish(reply))
        if view.include_usage:
            usage = _usage(Tokens.of(reply, view, answer_text(reply)))
            yield sse(orjson.dumps({**head, "choices": [], "usage": usage}).decode())
        yield sse("[DONE]")

    def error_body(self, error: ErrorReply, view: RequestView | None, request_id: str) -> dict[str, Any]:
        message, kind, code = ERRORS.get(error.status, ERRORS[500 if error.status >= 500 else 400])
        return {
            "error": {
                "message": error.message or message,
                "type": error.type or kind,
                "param": None,
                "code": error.code if error.code is not None else code,
            }
        }

    def request_id_header(self) -> str:
        return "x-request-id"

    def unauthorized(self, key: str | None) -> ErrorReply:
        if key is None:
            message = (
                "You didn't provide an API key. You need to provide your API key in an Authorization header using "
                "Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."
            )
            return ErrorReply(401, message, "invalid_request_error", None, None)
        # OpenAI shows the start and the last four characters of a wrong key, never the whole of it.
        masked = f"{key[:3]}{'*' * max(len(key) - 7, 4)}{key[-4:]}" if len(key) > 8 else "*" * len(key)
        message = (
            f"Incorrect API key provided: {masked}. You can find your API key at "
            "https://platform.openai.com/account/api-keys."
        )
        return ErrorReply(401, message, "invalid_request_error", "invalid_api_key", None)

    def unknown_model(self, model: str) -> ErrorReply:
        message = f"The model `{model}` does not exist or you do not have access to it."
        return ErrorReply(404, message, "invalid_request_error", "model_not_found", None)

    def unsupported(self, param: str, model: str) -> ErrorReply:
        message = f"Invalid parameter: '{param}' is not supported with this model."
        return ErrorReply(400, message, "invalid_request_error", None, None)

    def _head(self, reply: Reply, view: RequestView, number: int, kind: str) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-fake{number:08d}",
            "object": kind,
            "created": int(time.time()),
            "model": reply.model or view.model,
            "system_fingerprint": "fp_fake",
        }

    def _calls(self, reply: Reply) -> list[tuple[str, str, str]]:
        return [
            (call_id("call_", call, index), call.name, call.arguments) for index, call in enumerate(reply.tool_calls)
        ]


def _content(reply: Reply) -> str | None:
    if reply.json is not MISSING:
        return orjson.dumps(reply.json).decode()
    if reply.text is None and reply.tool_calls:
        return None
    return reply.text or ""


def _finish(reply: Reply) -> str:
    return reply.finish or ("tool_calls" if reply.tool_calls else "stop")


def _usage(tokens: Tokens) -> dict[str, Any]:
    return {
        "prompt_tokens": tokens.input,
        "completion_tokens": tokens.output,
        "total_tokens": tokens.input + tokens.output,
        "prompt_tokens_details": {"cached_tokens": tokens.cached, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": tokens.reasoning,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }
