"""What one provider API is to the fake: how it reads a request and writes answers and errors.

`server.py` serves each `Dialect` in `DIALECTS` at its `path` (and under `/ns/<namespace>`), and
does the rest (auth, model and parameter checks, rules, delays, the request log) the same way for all.
To add an API, write a module with a class like `OpenAIChat` (or derived from one, as `OpenAIResponses`
shares Chat Completions' errors) and add it to `DIALECTS` in `server.py`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from testkit.fake_provider.script import MISSING, Config, ErrorReply, Reply, RequestView, ToolCallReply


class Dialect(Protocol):
    name: str  # how rules name it: match.api
    path: str  # where it is served, e.g. "/v1/chat/completions"

    def api_key(self, headers: Mapping[str, str]) -> str | None:
        """The API key the request carries, if any."""

    def view(self, body: dict[str, Any]) -> RequestView:
        """What rules match on; `ValueError` (with the provider's wording) for a request it cannot read."""

    def answer(self, reply: Reply, view: RequestView, number: int) -> dict[str, Any]:
        """The whole answer's JSON body."""

    def stream(self, reply: Reply, view: RequestView, number: int, config: Config) -> Iterator[bytes]:
        """The answer's server-sent events, one chunk each."""

    def error_body(self, error: ErrorReply, view: RequestView | None, request_id: str) -> dict[str, Any]:
        """The provider's error body for this status (its default wording where the error has none)."""

    def request_id_header(self) -> str:
        """The response header that carries the request id."""

    def unauthorized(self, key: str | None) -> ErrorReply:
        """The provider's 401 for a missing or wrong key."""

    def unknown_model(self, model: str) -> ErrorReply:
        """The provider's 404 for a model it does not have."""

    def unsupported(self, param: str, model: str) -> ErrorReply:
        """The provider's 400 for a request field this model does not take."""


@dataclass(frozen=True, slots=True)
class Tokens:
    """A reply's token counts: `input` counts every prompt token, `cached` and `cache_write` among them."""

    input: int
    output: int
    cached: int
    cache_write: int
    reasoning: int

    @staticmethod
    def of(reply: Reply, view: RequestView, answer_text: str) -> Tokens:
        """The reply's own counts, else four characters a token of the request and of the answer."""
        usage = reply.usage
        return Tokens(
            input=usage.get("input", max(1, len(view.text) // 4)),
            output=usage.get("output", max(1, len(answer_text) // 4)),
            cached=usage.get("cached", 0),
            cache_write=usage.get("cache_write", 0),
            reasoning=usage.get("reasoning", 0),
        )


def answer_text(reply: Reply) -> str:
    """All the text of a reply (its text, JSON answer and tool calls' arguments), for counting tokens."""
    parts = [reply.text or ""]
    if reply.json is not MISSING:
        parts.append(orjson.dumps(reply.json).decode())
    parts.extend(call.arguments for call in reply.tool_calls)
    return "".join(parts)


def chunks(text: str, size: int) -> Iterator[str]:
    for start in range(0, len(text), size):
        yield text[start : start + size]


def halves(text: str) -> list[str]:
    """A tool call's arguments in two pieces, as providers split them over chunks."""
    middle = len(text) // 2
    return [piece for piece in (text[:middle], text[middle:]) if piece]


def call_id(prefix: str, call: ToolCallReply, index: int) -> str:
    """The call's scripted id, else one made from its name, arguments and place (the same every time)."""
    if call.id:
        return call.id
    digest = hashlib.sha256(f"{call.name}\0{call.arguments}\0{index}".encode()).hexdigest()
    return f"{prefix}{digest[:20]}"


def sse(data: str, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {data}\n\n".encode()


def instructed_view(
    api: str, body: dict[str, Any], instructions: str, texts: list[str], tools: tuple[str, ...], forced: str | None
) -> RequestView:
    """The view of a request whose system prompt (`instructions`) is a field apart from its messages'
    `texts`, in an API that always reports usage (Anthropic's Messages, OpenAI's Responses)."""
    return RequestView(
        api=api,
        model=body["model"],
        stream=body.get("stream") is True,
        text="\n".join([instructions, *texts] if instructions else texts),
        last=texts[-1],
        tools=tools,
        forced_tool=forced,
        params=frozenset(body),
        include_usage=True,
    )


def message_text(content: Any) -> str:
    """The text of a message's content, whatever its shape (string, parts, blocks, JSON)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(message_text(part) for part in content)
    if isinstance(content, dict):  # a content part or block: its text, a tool result's content, a tool use's input
        if "text" in content:
            return message_text(content["text"])
        if "content" in content:
            return message_text(content["content"])
        if "input" in content:
            return orjson.dumps(content["input"]).decode()
        return ""
    return orjson.dumps(content).decode()
