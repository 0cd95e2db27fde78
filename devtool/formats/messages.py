"""Model messages from OpenTelemetry spans, in the shape the DevTool's turns carry.

A turn's messages are `{"role", "content", "tool_calls": [{"id", "name", "arguments"}], "tool_call_id"}`
(keys without a value left out), the shape of `devtool.core` and the TypeScript library. Three sources:

- GenAI (latest): `gen_ai.input.messages` / `gen_ai.output.messages` hold `{"role", "parts": [...]}`
  (a JSON string, or a structured attribute). Text parts join into `content` (with newlines); any
  other part but a tool call (an image, a reasoning block) makes `content` the list of those parts as
  they are; `tool_call` parts become `tool_calls`; each `tool_call_response` part becomes a message of
  its own, `{"role": "tool", "tool_call_id", "content": response}`, before what is left of its message
  (dropped when nothing is). `gen_ai.system_instructions` comes first, as a `system` message.
- OpenInference: `llm.input_messages.<i>.message.role|content|contents.<j>.message_content.text|
  tool_calls.<k>.tool_call.id|function.name|function.arguments|tool_call_id`, by index.
- GenAI up to v1.36: one span event per message (`gen_ai.user.message`, ... with `role`, `content`,
  `tool_calls`, `id`), and `gen_ai.choice` (`message`, or `content` and `tool_calls`) for the answer.

JSON held in a string attribute is read strictly, except that text with the words NaN or Infinity is
never read as JSON (parsers disagree on them, and the store's SQL reader must reach the same result:
see `devtool.store.otlp_sql`); such text stays a string.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

import orjson

from devtool.core.jsonvalue import JSON
from devtool.formats import semconv as sc
from devtool.formats.otlp_spans import OtlpEvent

Message = dict[str, JSON]

_NON_JSON = re.compile(sc.NON_JSON_WORDS)


def json_text(value: JSON) -> JSON:
    """A string attribute read as JSON (None when it is not JSON); any other value as it is."""
    if not isinstance(value, str):
        return value
    if ("NaN" in value or "Infinity" in value) and _NON_JSON.search(value):  # the regex only when it may match
        return None
    try:
        parsed: JSON = orjson.loads(value)
    except orjson.JSONDecodeError:
        return None
    return parsed


def structured(value: JSON) -> JSON:
    """A value that may be JSON text (tool arguments, `input.value`): the object or array it holds, else itself."""
    parsed = json_text(value) if isinstance(value, str) else None
    return parsed if isinstance(parsed, dict | list) else value


def clean(fields: Mapping[str, JSON]) -> Message:
    """The fields that have a value."""
    return {key: value for key, value in fields.items() if value is not None}


def genai_messages(value: JSON) -> list[Message] | None:
    """`gen_ai.input.messages` as messages; None when the attribute is not a list of messages."""
    messages = json_text(value)
    if not isinstance(messages, list):
        return None
    found: list[Message] = []
    for message in messages:
        if isinstance(message, dict):
            found.extend(_split(message))
    return found


def genai_answer(value: JSON) -> Message | None:
    """The first message of `gen_ai.output.messages`, tool responses left out."""
    messages = json_text(value)
    if not isinstance(messages, list):
        return None
    first = next((message for message in messages if isinstance(message, dict)), None)
    return None if first is None else _base(first)


def system_message(value: JSON) -> Message | None:
    """`gen_ai.system_instructions` (a list of parts, or plain text) as a `system` message."""
    parts = json_text(value)
    if isinstance(parts, list):
        return _base({"role": "system", "parts": parts})
    if isinstance(value, str):
        return {"role": "system", "content": value}
    return None


def _split(message: dict[str, JSON]) -> list[Message]:
    parts = message.get("parts")
    if not isinstance(parts, list):
        return [_base(message)]
    found: list[Message] = []
    objects = 0
    for part in parts:
        if isinstance(part, dict):
            objects += 1
            if part.get("type") == "tool_call_response":
                response = part.get("response")
                content = part.get("result") if response is None else response
                found.append(clean({"role": "tool", "tool_call_id": part.get("id"), "content": content}))
    if len(found) < objects or not found:
        found.append(_base(message))
    return found


def _base(message: dict[str, JSON]) -> Message:
    role = message.get("role")
    role = role if isinstance(role, str) else None
    parts = message.get("parts")
    if not isinstance(parts, list):
        return clean({"role": role, "content": message.get("content")})
    calls: list[JSON] = []
    others: list[dict[str, JSON]] = []
    texts = True  # whether every other part is a text part with text content
    for part in parts:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "tool_call":
            calls.append(clean({"id": part.get("id"), "name": part.get("name"), "arguments": part.get("arguments")}))
        elif kind != "tool_call_response":
            others.append(part)
            texts = texts and kind == "text" and isinstance(part.get("content"), str)
    content: JSON = None
    if others and texts:
        content = "\n".join(str(p["content"]) for p in others)
    elif others:
        content = list(others)
    found: Message = {} if role is None else {"role": role}
    if content is not None:
        found["content"] = content
    if calls:
        found["tool_calls"] = calls
    return found


def _first(*values: JSON) -> JSON:
    return next((value for value in values if value is not None), None)


def openinference_messages(attributes: Mapping[str, JSON], prefix: str) -> list[Message] | None:
    """The messages flattened under `prefix` (`llm.input_messages.`), by index; None when there are none."""
    count = _count(attributes, prefix)
    if count == 0:
        return None
    return [_oi_message(attributes, f"{prefix}{i}.") for i in range(count)]


def _oi_message(attributes: Mapping[str, JSON], at: str) -> Message:
    content = _text(attributes, at + sc.OI_CONTENT)
    if content is None:
        texts = [
            _text(attributes, f"{at}{sc.OI_CONTENTS}{j}.{sc.OI_CONTENT_TEXT}")
            for j in range(_count(attributes, at + sc.OI_CONTENTS))
        ]
        present = [text for text in texts if text is not None]
        content = "\n".join(present) if present else None
    calls: list[JSON] = []
    for k in range(_count(attributes, at + sc.OI_TOOL_CALLS)):
        call = f"{at}{sc.OI_TOOL_CALLS}{k}."
        arguments = attributes.get(call + sc.OI_TOOL_CALL_ARGUMENTS)
        calls.append(
            clean(
                {
                    "id": _text(attributes, call + sc.OI_TOOL_CALL_ID),
                    "name": _text(attributes, call + sc.OI_TOOL_CALL_NAME),
                    "arguments": structured(arguments),
                }
            )
        )
    return clean(
        {
            "role": _text(attributes, at + sc.OI_ROLE),
            "content": content,
            "tool_calls": calls or None,
            "tool_call_id": _text(attributes, at + sc.OI_MESSAGE_TOOL_CALL_ID),
        }
    )


def _count(attributes: Iterable[str], prefix: str) -> int:
    """One more than the highest index `N` of the keys `prefix` + `N.` (up to `MAX_INDEX`); 0 if none."""
    pattern = re.compile(re.escape(prefix) + r"([0-9]+)\.")
    highest = -1
    for key in attributes:
        if key.startswith(prefix) and (found := pattern.match(key)):
            index = int(found.group(1))
            if index <= sc.MAX_INDEX:
                highest = max(highest, index)
    return highest + 1


def _text(attributes: Mapping[str, JSON], key: str) -> str | None:
    value = attributes.get(key)
    return value if isinstance(value, str) else None


def event_messages(events: Iterable[OtlpEvent]) -> list[Message] | None:
    """The messages of the older GenAI conventions' per-message events, in order; None when there are none."""
    found = [
        _legacy(event.attributes, sc.MESSAGE_EVENTS[event.name]) for event in events if event.name in sc.MESSAGE_EVENTS
    ]
    return found or None


def event_answer(events: Iterable[OtlpEvent]) -> Message | None:
    """The first `gen_ai.choice` event's message."""
    choice = next((event for event in events if event.name == sc.CHOICE_EVENT), None)
    if choice is None:
        return None
    message = json_text(choice.attributes.get("message"))
    source = message if isinstance(message, dict) else choice.attributes
    return _legacy(source, "assistant")


def _legacy(source: Mapping[str, JSON], role: str) -> Message:
    stated = source.get("role")
    calls = json_text(source.get("tool_calls"))
    tool_calls: list[JSON] = []
    if isinstance(calls, list):
        for call in calls:
            if isinstance(call, dict):
                function = call.get("function")
                function = function if isinstance(function, dict) else {}
                tool_calls.append(
                    clean(
                        {
                            "id": call.get("id"),
                            "name": function.get("name"),
                            "arguments": structured(function.get("arguments")),
                        }
                    )
                )
    call_id = source.get("id")
    return clean(
        {
            "role": stated if isinstance(stated, str) else role,
            "content": source.get("content"),
            "tool_calls": tool_calls or None,
            "tool_call_id": call_id if isinstance(call_id, str) else None,
        }
    )
