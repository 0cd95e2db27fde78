"""What one provider API is to the instrumentation: how a request reads, and how an answer does.

An `Api` (`chat_completions.py`, `responses.py`, `messages.py`) turns a request body, as the SDK sends
it, into what its turn shows (`Shown`: our messages, tool definitions and schema) and what its content
hash covers (the body less the fields that do not change the answer); and turns the provider's answer,
whole (`answer`) or streamed (a `StreamReader` given the server-sent events as they come), into our message, usage and
finish reason (`devtool.core.providers.adapter.Answer`), by the same conversions as the model adapters.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import orjson

from devtool.core.jsonvalue import JSON
from devtool.core.model import Message, ToolDefinition
from devtool.core.providers.adapter import Answer


@dataclass(frozen=True, slots=True)
class Shown:
    """A request as its turn shows it, in our shapes."""

    messages: list[Message]
    tools: list[ToolDefinition]
    schema: JSON


class StreamReader(Protocol):
    """One streamed answer, read event by event."""

    complete: bool  # the provider's last event arrived: the answer is whole

    def read(self, events: list[tuple[str | None, str]], pieces: list[str]) -> None:
        """Take events (name, data), in order; the piece of answer text each carries, if any, onto
        `pieces` (as it goes: an event that cannot be read raises, the pieces before it are there)."""

    def answer(self) -> Answer:
        """The answer the events so far make."""


class Api(Protocol):
    name: ClassVar[str]  # "openai.chat", "openai.responses", "anthropic.messages": in journal entries, as the fake's
    provider: ClassVar[str]  # whose prices apply
    path: ClassVar[str]  # the request path's end, e.g. "/chat/completions"
    not_hashed: ClassVar[frozenset[str]]  # body fields that do not change the answer

    def shown(self, body: dict[str, Any]) -> Shown: ...

    def answer(self, body: dict[str, Any]) -> Answer: ...

    def reader(self) -> StreamReader: ...


def tool_definition(name: Any, description: Any, parameters: Any) -> ToolDefinition:
    """A function tool as our tool definition, whatever the API called its fields."""
    return {
        "name": str(name),
        "description": description if isinstance(description, str) else "",
        "parameters": parameters if isinstance(parameters, dict) else {"type": "object"},
    }


def payloads(datas: list[str]) -> tuple[list[Any], Exception | None]:
    """The JSON of each of a stream's events (their `data`), parsed by orjson with no Python in
    between; and the error of the first that is not JSON, if one is not (the events before it parsed,
    so that a reader takes what came before it and then raises)."""
    try:
        return list(map(orjson.loads, datas)), None
    except orjson.JSONDecodeError:
        pass
    parsed: list[Any] = []
    for data in datas:
        try:
            parsed.append(orjson.loads(data))
        except orjson.JSONDecodeError as exc:
            return parsed, exc
    raise AssertionError("unreachable: the events read as a whole and not one by one")  # pragma: no cover
