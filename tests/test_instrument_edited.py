"""A fork's edited answer text for an SDK-recorded turn: the replay hands the SDK a valid answer of its
API and form (whole or streamed), with no request to the provider, and the SDK reads the edited text."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import anthropic
import openai
import pytest

import devtool.instrument
from devtool.core import MemorySink, run_with
from devtool.core.debugger import fork_snapshot, restore_snapshot
from devtool.instrument.edited import recorded_text
from testkit.fake_provider import FakeProvider

KEY = "sk-edited-test-0123456789"
HI = [{"role": "user", "content": "hi"}]

devtool.instrument.install()


def _chat(fake: FakeProvider, stream: bool) -> str:
    client = openai.OpenAI(base_url=fake.openai_base_url, api_key=KEY)
    if not stream:
        return client.chat.completions.create(model="gpt-4.1-mini", messages=HI).choices[0].message.content or ""  # type: ignore[arg-type]
    chunks = client.chat.completions.create(model="gpt-4.1-mini", messages=HI, stream=True)  # type: ignore[arg-type]
    return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)


def _responses(fake: FakeProvider, stream: bool) -> str:
    client = openai.OpenAI(base_url=fake.openai_base_url, api_key=KEY)
    if not stream:
        return client.responses.create(model="gpt-4.1-mini", input="hi").output_text
    with client.responses.stream(model="gpt-4.1-mini", input="hi") as events:
        return events.get_final_response().output_text


def _messages(fake: FakeProvider, stream: bool) -> str:
    client = anthropic.Anthropic(base_url=fake.anthropic_base_url, api_key=KEY)
    if not stream:
        answer = client.messages.create(model="claude-sonnet-4-5", max_tokens=64, messages=HI)  # type: ignore[arg-type]
        return "".join(block.text for block in answer.content if block.type == "text")
    with client.messages.stream(model="claude-sonnet-4-5", max_tokens=64, messages=HI) as events:  # type: ignore[arg-type]
        return events.get_final_text()


CASES: list[tuple[str, Callable[[FakeProvider, bool], str], str]] = [
    ("openai.chat", _chat, "gpt-4.1-mini"),
    ("openai.responses", _responses, "gpt-4.1-mini"),
    ("anthropic.messages", _messages, "claude-sonnet-4-5"),
]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize(("api", "call", "model"), CASES, ids=[case[0] for case in CASES])
def test_an_edited_sdk_answer_replays_as_the_sdk_reads_it_with_no_request(
    fake_provider: FakeProvider, api: str, call: Callable[[FakeProvider, bool], str], model: str, stream: bool
) -> None:
    fake_provider.reply({"text": "recorded answer"}, times=None)

    async def main() -> str:
        return await asyncio.to_thread(call, fake_provider, stream)

    sink = MemorySink()
    assert asyncio.run(run_with(main, sinks=[sink])) == "recorded answer"
    (turn,) = [e for e in sink.events if e["type"] == "turn:end"]
    fork = fork_snapshot(restore_snapshot(sink.events), outputs={turn["callId"]: "what if it said this"})
    again = MemorySink()
    assert asyncio.run(run_with(main, snapshot=fork, sinks=[again])) == "what if it said this"
    assert fake_provider.count() == 1  # the edited turn asked no one
    assert [e["cache"] for e in again.events if e["type"] == "turn:end"] == [True]


def test_an_api_it_does_not_know_gets_no_answer() -> None:
    assert recorded_text("google.gemini", False, "m", "x") is None
