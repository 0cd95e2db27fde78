"""A fork's edited input messages of an SDK-recorded turn: on the replay that turn's request carries
them (the fake provider receives the edited system message), goes live, and its answer reaches the
code as the SDK's object; a later turn whose input changed goes live, the rest is served."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import anthropic
import openai
import orjson
import pytest

import devtool.instrument
from devtool.core import MemorySink, run_with
from devtool.core.debugger import fork_snapshot, restore_snapshot
from devtool.instrument.edited_input import edited_body
from devtool.web.pages.call_edit import call_edit
from testkit.fake_provider import FakeProvider

KEY = "sk-edited-input-test-0123456789"
SYSTEM = "You are terse."
PIRATE = "You are a PIRATE."

devtool.instrument.install()

# One turn of each API: (fake, system, user, stream) -> the answer's text, read from the SDK's objects.
Ask = Callable[[FakeProvider, str, str, bool], str]


def _chat(fake: FakeProvider, system: str, user: str, stream: bool) -> str:
    client = openai.OpenAI(base_url=fake.openai_base_url, api_key=KEY)
    messages: Any = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    if not stream:
        return client.chat.completions.create(model="gpt-4.1-mini", messages=messages).choices[0].message.content or ""
    chunks = client.chat.completions.create(model="gpt-4.1-mini", messages=messages, stream=True)
    return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)


def _responses(fake: FakeProvider, system: str, user: str, stream: bool) -> str:
    client = openai.OpenAI(base_url=fake.openai_base_url, api_key=KEY)
    if not stream:
        return client.responses.create(model="gpt-4.1-mini", instructions=system, input=user).output_text
    with client.responses.stream(model="gpt-4.1-mini", instructions=system, input=user) as events:
        return events.get_final_response().output_text


def _messages(fake: FakeProvider, system: str, user: str, stream: bool) -> str:
    client = anthropic.Anthropic(base_url=fake.anthropic_base_url, api_key=KEY)
    messages: Any = [{"role": "user", "content": user}]
    if not stream:
        answer = client.messages.create(model="claude-sonnet-4-5", max_tokens=64, system=system, messages=messages)
        return "".join(block.text for block in answer.content if block.type == "text")
    with client.messages.stream(model="claude-sonnet-4-5", max_tokens=64, system=system, messages=messages) as events:
        return events.get_final_text()


CASES: list[tuple[str, Ask]] = [
    ("openai.chat", _chat),
    ("openai.responses", _responses),
    ("anthropic.messages", _messages),
]


def _system_of(body: dict[str, Any]) -> Any:
    """The system prompt a request body carries, in whichever field its API keeps it."""
    if "messages" in body and body["messages"] and body["messages"][0].get("role") == "system":
        return body["messages"][0]["content"]
    return body.get("instructions", body.get("system"))


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize(("api", "ask"), CASES, ids=[case[0] for case in CASES])
def test_an_edited_system_message_is_sent_and_only_the_changed_turns_go_live(
    fake_provider: FakeProvider, api: str, ask: Ask, stream: bool
) -> None:
    fake_provider.reply({"text": "arr"}, times=None, contains="PIRATE")
    fake_provider.reply({"text": "plain"}, times=None)

    def agent() -> list[str]:
        first = ask(fake_provider, SYSTEM, "plan the trip", stream)
        second = ask(fake_provider, SYSTEM, "book the hotel", stream)
        third = ask(fake_provider, SYSTEM, f"summarize: {second}", stream)
        return [first, second, third]

    async def main() -> list[str]:
        return await asyncio.to_thread(agent)

    sink = MemorySink()
    assert asyncio.run(run_with(main, sinks=[sink])) == ["plain", "plain", "plain"]
    assert fake_provider.count() == 3
    starts = [e for e in sink.events if e["type"] == "turn:start"]
    edited = [dict(m) for m in starts[1]["messages"]]
    assert edited[0] == {"role": "system", "content": SYSTEM}  # the shape the fork editor shows
    edited[0]["content"] = PIRATE
    fork = fork_snapshot(restore_snapshot(sink.events), messages={starts[1]["callId"]: edited})

    again = MemorySink()
    # The edited turn answers as a pirate; the summary of it changed, so it goes live too.
    assert asyncio.run(run_with(main, snapshot=fork, sinks=[again])) == ["plain", "arr", "plain"]
    requests = fake_provider.requests()
    assert len(requests) == 5  # the edited turn and the one whose input changed; the first was served
    sent = [r["body"] for r in requests[3:]]
    assert _system_of(sent[0]) == PIRATE
    assert _system_of(sent[1]) == SYSTEM
    assert "summarize: arr" in orjson.dumps(sent[1]).decode()
    assert [e["cache"] for e in again.events if e["type"] == "turn:end"] == [True, False, False]
    (shown,) = [e["messages"] for e in again.events if e["type"] == "turn:start" and e["callId"] == starts[1]["callId"]]
    assert shown == edited


def test_messages_left_as_shown_keep_their_wire_form() -> None:
    body = {
        "model": "claude-sonnet-4-5",
        "system": [{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]},
            {"role": "assistant", "content": "hello"},
            {"role": "user", "content": "what now"},
        ],
    }
    shown = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "what next?"},
    ]
    new = edited_body("anthropic.messages", body, shown)
    assert new is not None
    assert new["system"] == body["system"]
    assert new["messages"][:2] == body["messages"][:2]
    assert new["messages"][2] == {"role": "user", "content": "what next?"}
    unsystemed = edited_body("anthropic.messages", body, shown[1:])
    assert unsystemed is not None
    assert "system" not in unsystemed
    assert unsystemed["messages"] == new["messages"]


def test_chat_tool_calls_and_results_are_written_in_the_api_s_shape() -> None:
    edited = [
        {"role": "user", "content": "weather?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "name": "weather", "arguments": {"city": "Oslo"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "rain"},
    ]
    chat = edited_body("openai.chat", {"model": "m", "messages": []}, edited)
    assert chat is not None
    assert chat["messages"][1]["tool_calls"] == [
        {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": '{"city":"Oslo"}'}}
    ]
    responses = edited_body("openai.responses", {"model": "m", "input": []}, edited)
    assert responses is not None
    assert [item.get("type") for item in responses["input"]] == [None, "function_call", "function_call_output"]
    anthropic_body = edited_body("anthropic.messages", {"model": "m", "messages": []}, edited)
    assert anthropic_body is not None
    assert anthropic_body["messages"][1]["content"] == [
        {"type": "tool_use", "id": "c1", "name": "weather", "input": {"city": "Oslo"}}
    ]
    assert anthropic_body["messages"][2] == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "rain"}],
    }
    assert edited_body("google.gemini", {}, edited) is None


def test_the_fork_editor_offers_an_sdk_turn_s_messages() -> None:
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "hi"}]
    end = {
        "message": {"role": "assistant", "content": "plain"},
        "messages": messages,
        "response": {"api": "openai.chat"},
    }
    edit = call_edit("turn", "completed", "root/turn:gpt-4.1-mini:0", end, None)
    assert edit is not None
    assert edit.messages is not None
    assert orjson.loads(edit.messages) == messages


def test_an_async_client_sends_the_edited_messages(fake_provider: FakeProvider) -> None:
    fake_provider.reply({"text": "arr"}, times=None, contains="PIRATE")
    fake_provider.reply({"text": "plain"}, times=None)

    async def main() -> str:
        client = openai.AsyncOpenAI(base_url=fake_provider.openai_base_url, api_key=KEY)  # one per event loop
        messages: Any = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "hi"}]
        answer = await client.chat.completions.create(model="gpt-4.1-mini", messages=messages)
        return answer.choices[0].message.content or ""

    sink = MemorySink()
    assert asyncio.run(run_with(main, sinks=[sink])) == "plain"
    (start,) = [e for e in sink.events if e["type"] == "turn:start"]
    edited = [{"role": "system", "content": PIRATE}, {"role": "user", "content": "hi"}]
    fork = fork_snapshot(restore_snapshot(sink.events), messages={start["callId"]: edited})
    assert asyncio.run(run_with(main, snapshot=fork)) == "arr"
    assert fake_provider.requests()[-1]["body"]["messages"] == edited


def test_two_edited_system_messages_reach_anthropic_as_two_blocks(fake_provider: FakeProvider) -> None:
    fake_provider.reply({"text": "arr"}, times=None, contains="PIRATE")
    fake_provider.reply({"text": "plain"}, times=None)

    async def main() -> str:
        return await asyncio.to_thread(_messages, fake_provider, SYSTEM, "hi", False)

    sink = MemorySink()
    assert asyncio.run(run_with(main, sinks=[sink])) == "plain"
    (start,) = [e for e in sink.events if e["type"] == "turn:start"]
    edited = [
        {"role": "system", "content": SYSTEM},
        {"role": "system", "content": PIRATE},
        {"role": "user", "content": "hi"},
    ]
    fork = fork_snapshot(restore_snapshot(sink.events), messages={start["callId"]: edited})
    assert asyncio.run(run_with(main, snapshot=fork)) == "arr"
    assert fake_provider.count() == 2
    # Each system message is a block of its own, not one text the two were joined into.
    assert fake_provider.requests()[-1]["body"]["system"] == [
        {"type": "text", "text": SYSTEM},
        {"type": "text", "text": PIRATE},
    ]
