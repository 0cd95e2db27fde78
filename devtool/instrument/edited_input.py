"""A fork's edited input messages for an SDK-recorded turn, as the request body that turn sends instead.

A counterfactual fork (`devtool.core.counterfactual`) may give a turn's input messages: the list its
fork editor shows, in our shape (`Api.shown`: `{"role", "content"}`, `tool_calls` as `{id, name,
arguments}`, tool results as `role: "tool"` messages). On the replay, the SDK's request at that callId
is rewritten to carry them (so its content hash changes and it goes live), and only the fields that
hold messages change:

- Chat Completions: `messages`, one wire message per message (a system message stays in the list);
- Responses: `instructions` is the leading system message when the request had instructions (none in
  the edit: dropped); the rest is `input` (a lone user message of a text `input` stays text);
- Anthropic Messages: `system` is the leading system message, or one text block for each when there are
  several (none: dropped); the rest is `messages`, consecutive tool results in one user message of
  `tool_result` blocks.

A message left as the editor showed it keeps its wire form (content parts, cache markers, reasoning
items): when the edit has as many messages as were shown, each wire message whose shown messages are
unchanged is sent as it was, and only the changed ones are written anew. An edit that adds or removes
messages is written anew whole.

Only the edited turn's request is rewritten: the SDK's later requests are what the caller's code sends
(a conversation that goes on holds the edited turn's new answer, so its input changed and it goes
live); a `prompt()` turn, whose loop we own, goes on from the edited messages instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from devtool.instrument.chat_completions import _message as chat_shown
from devtool.instrument.messages import _messages as messages_shown
from devtool.instrument.messages import _text
from devtool.instrument.responses import _message as responses_shown

Wire = list[Any]


def edited_body(api: str, body: dict[str, Any], edited: list[dict[str, Any]]) -> dict[str, Any] | None:
    """`body` (a request of `api`) carrying the `edited` messages instead of its own; None for an API
    this module does not know."""
    if api == "openai.chat":
        return {**body, "messages": _aligned(_chat_elements(body.get("messages")), edited, _chat_wire)}
    if api == "openai.responses":
        return _responses(body, edited)
    if api == "anthropic.messages":
        return _anthropic(body, edited)
    return None


def _aligned(
    elements: list[tuple[Any, list[dict[str, Any]]]], edited: list[dict[str, Any]], wire: Callable[[list[Any]], Wire]
) -> Wire:
    """The wire elements for `edited`, given the request's own (`elements`: each with the messages it
    shows as): unchanged ones kept, changed ones written by `wire`."""
    if sum(len(shown) for _, shown in elements) != len(edited):
        return wire(edited)
    out: Wire = []
    at = 0
    for element, shown in elements:
        part = edited[at : at + len(shown)]
        at += len(shown)
        out.extend([element] if part == shown else wire(part))
    return out


def _chat_elements(messages: Any) -> list[tuple[Any, list[dict[str, Any]]]]:
    return [(m, [dict(chat_shown(m))]) for m in messages or () if type(m) is dict]


def _chat_wire(messages: list[Any]) -> Wire:
    out: Wire = []
    for message in messages:
        wire = {"role": message.get("role", "user"), "content": message.get("content")}
        if calls := message.get("tool_calls"):
            wire["tool_calls"] = [
                {
                    "id": c.get("id", ""),
                    "type": "function",
                    "function": {"name": c.get("name", ""), "arguments": _arguments(c)},
                }
                for c in calls
            ]
        if "tool_call_id" in message:
            wire["tool_call_id"] = message["tool_call_id"]
        out.append(wire)
    return out


def _responses(body: dict[str, Any], edited: list[dict[str, Any]]) -> dict[str, Any]:
    new = dict(body)
    rest = edited
    if isinstance(body.get("instructions"), str) and body["instructions"]:
        if edited and edited[0].get("role") == "system":
            new["instructions"], rest = edited[0].get("content"), edited[1:]
        else:
            del new["instructions"]
    items = body.get("input")
    if isinstance(items, str):
        shown = [{"role": "user", "content": items}]
        new["input"] = items if rest == shown else _responses_wire(rest)
    else:
        elements = [(item, [dict(responses_shown(item))]) for item in items or () if isinstance(item, dict)]
        new["input"] = _aligned(elements, rest, _responses_wire)
    return new


def _responses_wire(messages: list[Any]) -> Wire:
    out: Wire = []
    for message in messages:
        role = message.get("role", "user")
        if role == "tool":
            output = message.get("content")
            text = output if isinstance(output, str) else orjson.dumps(output).decode()
            out.append({"type": "function_call_output", "call_id": message.get("tool_call_id", ""), "output": text})
            continue
        if message.get("content") is not None or not message.get("tool_calls"):
            out.append({"role": role, "content": message.get("content") or ""})
        for call in message.get("tool_calls") or ():
            out.append(
                {
                    "type": "function_call",
                    "call_id": call.get("id", ""),
                    "name": call.get("name", ""),
                    "arguments": _arguments(call),
                }
            )
    return out


def _anthropic(body: dict[str, Any], edited: list[dict[str, Any]]) -> dict[str, Any]:
    new = dict(body)
    system = edited[: _leading_system(edited)]
    rest = edited[len(system) :]
    if system:
        texts = [m.get("content") for m in system]
        kept = body.get("system")
        # The request's own system (blocks with cache markers, say) when the edit left its text alone.
        if len(texts) == 1:
            new["system"] = kept if texts[0] == _text(kept) else str(texts[0] or "")
        else:
            # Several system messages stay several: one text block each, as the API takes them.
            new["system"] = [{"type": "text", "text": str(t or "")} for t in texts]
    else:
        new.pop("system", None)
    elements = [(m, [dict(s) for s in messages_shown(m)]) for m in body.get("messages") or () if isinstance(m, dict)]
    new["messages"] = _aligned(elements, rest, _anthropic_wire)
    return new


def _leading_system(messages: list[dict[str, Any]]) -> int:
    count = 0
    while count < len(messages) and messages[count].get("role") == "system":
        count += 1
    return count


def _anthropic_wire(messages: list[Any]) -> Wire:
    """Our messages as Anthropic's: tool results (and a user message after them) in one user message."""
    out: Wire = []
    for message in messages:
        role, content = message.get("role", "user"), message.get("content")
        if role == "tool":
            block = {
                "type": "tool_result",
                "tool_use_id": message.get("tool_call_id", ""),
                "content": _block_text(content),
            }
            if out and out[-1]["role"] == "user" and isinstance(out[-1]["content"], list):
                out[-1]["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
            continue
        calls = message.get("tool_calls") or ()
        if role == "user" and out and out[-1]["role"] == "user" and isinstance(out[-1]["content"], list):
            out[-1]["content"].extend(_blocks(content))
            continue
        if not calls:
            out.append({"role": "assistant" if role == "assistant" else "user", "content": content})
            continue
        uses = [
            {"type": "tool_use", "id": c.get("id", ""), "name": c.get("name", ""), "input": _input(c.get("arguments"))}
            for c in calls
        ]
        out.append({"role": "assistant", "content": [*_blocks(content), *uses]})
    return out


def _blocks(content: Any) -> list[Any]:
    if content is None or content == "":
        return []
    return list(content) if isinstance(content, list) else [{"type": "text", "text": str(content)}]


def _block_text(content: Any) -> Any:
    return content if isinstance(content, (str, list)) else orjson.dumps(content).decode()


def _arguments(call: dict[str, Any]) -> str:
    arguments = call.get("arguments", "")
    return arguments if isinstance(arguments, str) else orjson.dumps(arguments).decode()


def _input(arguments: Any) -> Any:
    if isinstance(arguments, str):
        try:
            return orjson.loads(arguments or "{}")
        except orjson.JSONDecodeError:
            return {"arguments": arguments}
    return arguments if isinstance(arguments, dict) else {}
