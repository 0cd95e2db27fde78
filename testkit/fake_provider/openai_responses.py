"""OpenAI's Responses API as the fake speaks it: `POST /v1/responses`, whole or streamed.

A request's `input` is text or a list of items (messages with text or content parts, `function_call`
and `function_call_output` items), with `instructions`, `tools` (functions) and `text.format` (a JSON
schema). The answer is a `response` object whose `output` holds a `message` item (one `output_text`
part) and a `function_call` item per tool call, with `usage`. Streamed, it is the event sequence OpenAI
sends (each with its `sequence_number`, and its `type` as the SSE event name): `response.created`,
`response.in_progress`, per item `response.output_item.added`, for text `response.content_part.added`,
`response.output_text.delta` in `chunk_size` pieces, `response.output_text.done`,
`response.content_part.done`, for a call `response.function_call_arguments.delta` (in two pieces) and
`.done`, then `response.output_item.done`, and last `response.completed` with the whole response
(`response.incomplete` for a reply with `finish: "length"`).
Errors, keys and refusals are Chat Completions' (the same error bodies and wording).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import orjson

from testkit.fake_provider import dialect
from testkit.fake_provider.dialect import Tokens, answer_text, call_id, chunks, halves, message_text, sse
from testkit.fake_provider.openai_chat import OpenAIChat
from testkit.fake_provider.script import MISSING, Config, Reply, RequestView


class OpenAIResponses(OpenAIChat):
    name = "openai.responses"
    path = "/v1/responses"

    def view(self, body: dict[str, Any]) -> RequestView:
        items = body.get("input")
        if not isinstance(body.get("model"), str) or not isinstance(items, str | list) or not items:
            raise ValueError("Missing required parameter: 'input'.")
        texts = [items] if isinstance(items, str) else [_item_text(item) for item in items]
        instructions = message_text(body.get("instructions"))
        tools = tuple(
            str(tool.get("name")) for tool in body.get("tools") or [] if isinstance(tool, dict) and "name" in tool
        )
        choice = body.get("tool_choice")
        forced = choice.get("name") if isinstance(choice, dict) and choice.get("type") == "function" else None
        return dialect.instructed_view(self.name, body, instructions, texts, tools, forced)

    def answer(self, reply: Reply, view: RequestView, number: int) -> dict[str, Any]:
        items = [item for item, _ in self._items(reply, number)]
        return self._response(reply, view, number, "completed", items)

    def stream(self, reply: Reply, view: RequestView, number: int, config: Config) -> Iterator[bytes]:
        sequence = iter(range(1 << 30))

        def event(kind: str, **fields: Any) -> bytes:
            return sse(orjson.dumps({"type": kind, "sequence_number": next(sequence), **fields}).decode(), event=kind)

        started = self._response(reply, view, number, "in_progress", [])
        yield event("response.created", response=started)
        yield event("response.in_progress", response=started)
        done: list[dict[str, Any]] = []
        for index, (item, text) in enumerate(self._items(reply, number)):
            at = {"output_index": index}
            if item["type"] == "message":
                yield event("response.output_item.added", **at, item={**item, "status": "in_progress", "content": []})
                part = {"item_id": item["id"], **at, "content_index": 0}
                empty = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
                yield event("response.content_part.added", **part, part=empty)
                for piece in chunks(text, reply.chunk_size or config.chunk_size):
                    yield event("response.output_text.delta", **part, delta=piece, logprobs=[])
                yield event("response.output_text.done", **part, text=text, logprobs=[])
                yield event("response.content_part.done", **part, part=item["content"][0])
            else:
                opened = {**item, "status": "in_progress", "arguments": ""}
                yield event("response.output_item.added", **at, item=opened)
                for piece in halves(item["arguments"]):
                    yield event("response.function_call_arguments.delta", item_id=item["id"], **at, delta=piece)
                yield event(
                    "response.function_call_arguments.done",
                    item_id=item["id"],
                    **at,
                    name=item["name"],
                    arguments=item["arguments"],
                )
            yield event("response.output_item.done", **at, item=item)
            done.append(item)
        final = self._response(reply, view, number, "completed", done)
        yield event(f"response.{final['status']}", response=final)

    def _items(self, reply: Reply, number: int) -> list[tuple[dict[str, Any], str]]:
        """The output items in the order the model writes them, each with its text (a message's)."""
        items: list[tuple[dict[str, Any], str]] = []
        text = orjson.dumps(reply.json).decode() if reply.json is not MISSING else reply.text
        if text or not reply.tool_calls:
            part = {"type": "output_text", "text": text or "", "annotations": [], "logprobs": []}
            message = {
                "id": f"msg_fake{number:08d}",
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [part],
            }
            items.append((message, text or ""))
        for index, call in enumerate(reply.tool_calls):
            cid = call_id("call_", call, index)
            item = {
                "id": f"fc_{cid.removeprefix('call_')}",
                "type": "function_call",
                "status": "completed",
                "call_id": cid,
                "name": call.name,
                "arguments": call.arguments,
            }
            items.append((item, ""))
        return items

    def _response(
        self, reply: Reply, view: RequestView, number: int, status: str, output: list[dict[str, Any]]
    ) -> dict[str, Any]:
        tokens = Tokens.of(reply, view, answer_text(reply))
        done = status == "completed"
        finish = reply.finish
        return {
            "id": f"resp_fake{number:08d}",
            "object": "response",
            "created_at": int(time.time()),
            "status": "incomplete" if done and finish == "length" else status,
            "completed_at": int(time.time()) if done else None,
            "error": None,
            "incomplete_details": {"reason": "max_output_tokens"} if done and finish == "length" else None,
            "instructions": None,
            "max_output_tokens": None,
            "model": reply.model or view.model,
            "output": output,
            "parallel_tool_calls": True,
            "previous_response_id": None,
            "reasoning": {"effort": None, "summary": None},
            "store": True,
            "temperature": 1.0,
            "text": {"format": {"type": "text"}, "verbosity": "medium"},
            "tool_choice": "auto",
            "tools": [],
            "top_p": 1.0,
            "truncation": "disabled",
            "usage": _usage(tokens) if done else None,
            "user": None,
            "metadata": {},
        }


def _item_text(item: Any) -> str:
    """The text of an input item: a message's content, a call's arguments, a call output's output."""
    if not isinstance(item, dict):
        return ""
    if item.get("type") == "function_call":
        return message_text(item.get("arguments"))
    if item.get("type") == "function_call_output":
        return message_text(item.get("output"))
    return message_text(item.get("content"))


def _usage(tokens: Tokens) -> dict[str, Any]:
    return {
        "input_tokens": tokens.input,
        "input_tokens_details": {"cached_tokens": tokens.cached, "cache_write_tokens": tokens.cache_write},
        "output_tokens": tokens.output,
        "output_tokens_details": {"reasoning_tokens": tokens.reasoning},
        "total_tokens": tokens.input + tokens.output,
    }
