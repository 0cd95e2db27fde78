"""What a test scripts the fake provider with: rules (a match and a reply), and each namespace's state.

A rule answers the requests its `match` accepts, `times` times (`null`: every time); the first rule
in the order they were added that accepts a request and has uses left answers it. A reply is
provider-neutral and each API renders it in its own wire format (`openai_chat.py`,
`anthropic_messages.py`). Everything is checked when it is added, so a mistyped field is a 400 to
the test that sent it, not a puzzling answer later.

A namespace (one per test, or `default`) has its own rules, config and log of requests.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

MATCH_FIELDS: Final = ("api", "model", "contains", "last", "tool")
REPLY_FIELDS: Final = (
    "text",
    "tool_calls",
    "json",
    "usage",
    "model",
    "finish",
    "error",
    "delay",
    "chunk_delay",
    "chunk_size",
)
USAGE_FIELDS: Final = ("input", "output", "cached", "cache_write", "reasoning")
ERROR_FIELDS: Final = ("status", "message", "type", "code", "retry_after")
CONFIG_FIELDS: Final = ("api_key", "models", "unsupported_params", "chunk_delay", "chunk_size")
MISSING: Final[Any] = object()


class ScriptError(ValueError):
    """A rule, reply or config the fake cannot use; the message says which field and why."""


@dataclass(frozen=True, slots=True)
class RequestView:
    """What rules match on, read from a request by its API's module."""

    api: str
    model: str
    stream: bool
    text: str  # every message's text (system, user, assistant, tool results), one per line
    last: str  # the last message's text
    tools: tuple[str, ...]  # names of the tools offered
    forced_tool: str | None  # the tool the request forces the model to call
    params: frozenset[str]  # the request's top-level fields
    include_usage: bool  # a streamed answer ends with a usage chunk (OpenAI asks for it)


@dataclass(frozen=True, slots=True)
class ToolCallReply:
    name: str
    arguments: str  # JSON text, as the model writes it
    id: str | None


@dataclass(frozen=True, slots=True)
class ErrorReply:
    status: int
    message: str | None
    type: str | None
    code: str | None
    retry_after: float | None


@dataclass(frozen=True, slots=True)
class Reply:
    text: str | None = None
    tool_calls: tuple[ToolCallReply, ...] = ()
    json: Any = MISSING
    usage: dict[str, int] = field(default_factory=dict)
    model: str | None = None
    finish: str | None = None
    error: ErrorReply | None = None
    delay: float = 0.0
    chunk_delay: float | None = None
    chunk_size: int | None = None


@dataclass(frozen=True, slots=True)
class Match:
    api: str | None = None
    model: str | None = None
    contains: str | None = None
    last: str | None = None
    tool: str | None = None

    def accepts(self, view: RequestView) -> bool:
        return (
            (self.api is None or self.api == view.api)
            and (self.model is None or self.model == view.model)
            and (self.contains is None or self.contains in view.text)
            and (self.last is None or self.last in view.last)
            and (self.tool is None or self.tool in view.tools)
        )


@dataclass(slots=True)
class Rule:
    match: Match
    reply: Reply
    times: int | None
    used: int = 0

    def describe(self) -> dict[str, Any]:
        left = None if self.times is None else self.times - self.used
        return {"match": {k: v for k in MATCH_FIELDS if (v := getattr(self.match, k)) is not None}, "left": left}


@dataclass(slots=True)
class Config:
    api_key: str | None = None  # when set, a request with another key gets the provider's 401
    models: tuple[str, ...] | None = None  # when set, another model gets the provider's 404
    unsupported_params: frozenset[str] = frozenset()  # a request with one of these gets a 400 naming it
    chunk_delay: float = 0.0  # seconds between the chunks of a streamed answer
    chunk_size: int = 8  # characters of text per chunk


@dataclass(slots=True)
class Namespace:
    rules: list[Rule] = field(default_factory=list)
    config: Config = field(default_factory=Config)
    requests: list[dict[str, Any]] = field(default_factory=list)
    ids: int = 0

    def take(self, view: RequestView) -> Rule | None:
        for rule in self.rules:
            if (rule.times is None or rule.used < rule.times) and rule.match.accepts(view):
                rule.used += 1
                return rule
        return None

    def next_id(self) -> int:
        self.ids += 1
        return self.ids


def parse_rule(data: Any) -> Rule:
    if not isinstance(data, dict):
        raise ScriptError(f"a rule is an object with match, reply and times, got {data!r}")
    _only(data, ("match", "reply", "times"), "rule")
    match = data.get("match") or {}
    if not isinstance(match, dict):
        raise ScriptError(f"rule match must be an object, got {match!r}")
    _only(match, MATCH_FIELDS, "match")
    for key, value in match.items():
        if not isinstance(value, str):
            raise ScriptError(f"match.{key} must be a string, got {value!r}")
    times = data.get("times", 1)
    if times is not None and (isinstance(times, bool) or not isinstance(times, int) or times < 1):
        raise ScriptError(f"rule times must be a positive integer or null (every time), got {times!r}")
    return Rule(Match(**match), parse_reply(data.get("reply")), times)


def parse_reply(data: Any) -> Reply:
    if not isinstance(data, dict):
        raise ScriptError(f"a reply is an object ({', '.join(REPLY_FIELDS)}), got {data!r}")
    _only(data, REPLY_FIELDS, "reply")
    text = data.get("text")
    if text is not None and not isinstance(text, str):
        raise ScriptError(f"reply.text must be a string, got {text!r}")
    calls = tuple(_tool_call(call, index) for index, call in enumerate(data.get("tool_calls") or ()))
    usage = data.get("usage") or {}
    if not isinstance(usage, dict):
        raise ScriptError(f"reply.usage must be an object, got {usage!r}")
    _only(usage, USAGE_FIELDS, "reply.usage")
    for key, value in usage.items():
        _count(value, f"reply.usage.{key}")
    error = _error(data["error"]) if data.get("error") is not None else None
    size = data.get("chunk_size")
    if size is not None:
        _count(size, "reply.chunk_size", least=1)
    if text is None and not calls and "json" not in data and error is None:
        raise ScriptError("a reply needs text, tool_calls, json or error")
    return Reply(
        text=text,
        tool_calls=calls,
        json=data.get("json", MISSING),
        usage=usage,
        model=_optional_str(data, "model"),
        finish=_optional_str(data, "finish"),
        error=error,
        delay=_seconds(data.get("delay", 0.0), "reply.delay"),
        chunk_delay=None if data.get("chunk_delay") is None else _seconds(data["chunk_delay"], "reply.chunk_delay"),
        chunk_size=size,
    )


def parse_config(data: Any, config: Config) -> Config:
    """`config` with the fields of `data` changed."""
    if not isinstance(data, dict):
        raise ScriptError(f"config is an object ({', '.join(CONFIG_FIELDS)}), got {data!r}")
    _only(data, CONFIG_FIELDS, "config")
    changed = Config(config.api_key, config.models, config.unsupported_params, config.chunk_delay, config.chunk_size)
    if "api_key" in data:
        changed.api_key = _optional_str(data, "api_key")
    if "models" in data:
        models = data["models"]
        if models is not None and not (isinstance(models, list) and all(isinstance(m, str) for m in models)):
            raise ScriptError(f"config.models must be a list of model ids or null, got {models!r}")
        changed.models = None if models is None else tuple(models)
    if "unsupported_params" in data:
        params = data["unsupported_params"] or []
        if not (isinstance(params, list) and all(isinstance(p, str) for p in params)):
            raise ScriptError(f"config.unsupported_params must be a list of request fields, got {params!r}")
        changed.unsupported_params = frozenset(params)
    if "chunk_delay" in data:
        changed.chunk_delay = _seconds(data["chunk_delay"], "config.chunk_delay")
    if "chunk_size" in data:
        changed.chunk_size = _count(data["chunk_size"], "config.chunk_size", least=1)
    return changed


def _tool_call(data: Any, index: int) -> ToolCallReply:
    where = f"reply.tool_calls[{index}]"
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        raise ScriptError(f"{where} must be an object with a name, got {data!r}")
    _only(data, ("name", "arguments", "id"), where)
    arguments = data.get("arguments", {})
    if isinstance(arguments, dict):
        arguments = orjson.dumps(arguments).decode()
    if not isinstance(arguments, str):
        raise ScriptError(f"{where}.arguments must be an object or JSON text, got {arguments!r}")
    return ToolCallReply(data["name"], arguments, _optional_str(data, "id"))


def _error(data: Any) -> ErrorReply:
    if not isinstance(data, dict):
        raise ScriptError(f"reply.error must be an object with a status, got {data!r}")
    _only(data, ERROR_FIELDS, "reply.error")
    status = _count(data.get("status"), "reply.error.status", least=400)
    retry = data.get("retry_after")
    return ErrorReply(
        status=status,
        message=_optional_str(data, "message"),
        type=_optional_str(data, "type"),
        code=_optional_str(data, "code"),
        retry_after=None if retry is None else _seconds(retry, "reply.error.retry_after"),
    )


def _only(data: dict[str, Any], fields: tuple[str, ...], where: str) -> None:
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ScriptError(f"{where} has an unknown field {unknown[0]!r} (its fields: {', '.join(fields)})")


def _optional_str(data: dict[str, Any], key: str) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise ScriptError(f"{key} must be a string, got {value!r}")
    return value


def _count(value: Any, where: str, least: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ScriptError(f"{where} must be an integer of at least {least}, got {value!r}")
    return value


def _seconds(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise ScriptError(f"{where} must be a number of seconds, got {value!r}")
    return float(value)
