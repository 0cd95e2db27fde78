"""A fork's edited answer text as the provider would have sent it, for an SDK-recorded turn's replay.

A counterfactual fork (`devtool.core.counterfactual`) may give an SDK turn's answer as text alone. The
SDK parses only what its API sends, in the form it asked for (a whole body, or server-sent events), so
the replay writes that text as a minimal answer of the request's API and form: one text part, a
`stop` finish, zero usage (no model was asked: a served turn costs nothing).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

EDITED_ID = "edited"


def recorded_text(api: str, streamed: bool, model: str, text: str) -> dict[str, Any] | None:
    """`text` as a journaled answer of `api` (`openai.chat`, `openai.responses`, `anthropic.messages`),
    whole or streamed, as a journal entry (`exchange.Recorded`); None for an API this module does not know."""
    writers: dict[str, tuple[Callable[[str, str], dict[str, Any]], Callable[[str, str], str]]] = {
        "openai.chat": (_chat_body, _chat_sse),
        "openai.responses": (_responses_body, _responses_sse),
        "anthropic.messages": (_messages_body, _messages_sse),
    }
    writer = writers.get(api)
    if writer is None:
        return None
    if streamed:
        return {"api": api, "status": 200, "sse": writer[1](model, text)}
    return {"api": api, "status": 200, "body": writer[0](model, text)}


def _event(data: Any, name: str | None = None) -> str:
    head = f"event: {name}\n" if name else ""
    return f"{head}data: {orjson.dumps(data).decode()}\n\n"


def _chat_body(model: str, text: str) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{EDITED_ID}",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": None},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }


def _chat_sse(model: str, text: str) -> str:
    head = {"id": f"chatcmpl-{EDITED_ID}", "object": "chat.completion.chunk", "created": 0, "model": model}
    first = {**head, "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": None}]}
    last = {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    return _event(first) + _event(last) + "data: [DONE]\n\n"


def _responses_body(model: str, text: str) -> dict[str, Any]:
    part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
    item = {"id": f"msg_{EDITED_ID}", "type": "message", "status": "completed", "role": "assistant", "content": [part]}
    return {
        "id": f"resp_{EDITED_ID}",
        "object": "response",
        "created_at": 0,
        "status": "completed",
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "model": model,
        "output": [item],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": 0,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 0,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 0,
        },
        "metadata": {},
    }


def _responses_sse(model: str, text: str) -> str:
    body = _responses_body(model, text)
    item = body["output"][0]
    at = {"item_id": item["id"], "output_index": 0, "content_index": 0}
    events: list[tuple[str, dict[str, Any]]] = [
        ("response.created", {"response": {**body, "status": "in_progress", "output": [], "usage": None}}),
        ("response.output_item.added", {"output_index": 0, "item": {**item, "status": "in_progress", "content": []}}),
        ("response.content_part.added", {**at, "part": {**item["content"][0], "text": ""}}),
        ("response.output_text.delta", {**at, "delta": text, "logprobs": []}),
        ("response.output_text.done", {**at, "text": text, "logprobs": []}),
        ("response.content_part.done", {**at, "part": item["content"][0]}),
        ("response.output_item.done", {"output_index": 0, "item": item}),
        ("response.completed", {"response": body}),
    ]
    return "".join(
        _event({"type": name, "sequence_number": number, **data}, name) for number, (name, data) in enumerate(events)
    )


def _messages_body(model: str, text: str) -> dict[str, Any]:
    return {
        "id": f"msg_{EDITED_ID}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 0, "output_tokens": 0},
    }


def _messages_sse(model: str, text: str) -> str:
    started = {**_messages_body(model, text), "content": [], "stop_reason": None}
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": started},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": 0},
        },
        {"type": "message_stop"},
    ]
    return "".join(_event(event, event["type"]) for event in events)
