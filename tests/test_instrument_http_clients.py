"""Streamed and whole answers recorded and replayed whatever HTTP client the SDK was given: its default
(`httpx2`), a caller's `httpx.Client`/`httpx.AsyncClient` (the OpenAI SDK takes either library), an
`httpx2` client of the caller's; and LiteLLM's OpenAI route, which makes an OpenAI client of its own on
an `httpx` client. Each is recorded in a run against the fake provider, then replayed from that run's
snapshot: the same text, the replay's turn cached, and one provider request in all."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import pytest

import devtool.instrument
from devtool.core import MemorySink, run_with
from devtool.core.debugger import dump_snapshot
from testkit.fake_provider import FakeProvider

# LiteLLM fetches its price table from the network at import unless told to use its own copy.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
import litellm

KEY = "sk-http-clients-0123456789"
HI = [{"role": "user", "content": "hi"}]
TEXT = "Streamed through the caller's own client."

devtool.instrument.install()

Ask = Callable[[FakeProvider], Any]


def _openai_chat(client: Callable[[str], Any]) -> Ask:
    def ask(fake: FakeProvider) -> Any:
        chunks = client(fake.openai_base_url).chat.completions.create(model="gpt-4.1-mini", messages=HI, stream=True)
        return "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices)

    return ask


def _openai_chat_async(client: Callable[[str], Any]) -> Ask:
    async def ask(fake: FakeProvider) -> Any:
        chunks = await client(fake.openai_base_url).chat.completions.create(
            model="gpt-4.1-mini", messages=HI, stream=True
        )
        return "".join([chunk.choices[0].delta.content or "" async for chunk in chunks if chunk.choices])

    return ask


def _anthropic(client: Callable[[str], Any]) -> Ask:
    def ask(fake: FakeProvider) -> Any:
        events = client(fake.anthropic_base_url).messages.create(
            model="claude-sonnet-4-5", max_tokens=64, messages=HI, stream=True
        )
        return "".join(event.delta.text for event in events if event.type == "content_block_delta")

    return ask


def _anthropic_async(client: Callable[[str], Any]) -> Ask:
    async def ask(fake: FakeProvider) -> Any:
        with_stream = await client(fake.anthropic_base_url).messages.create(
            model="claude-sonnet-4-5", max_tokens=64, messages=HI, stream=True
        )
        return "".join([event.delta.text async for event in with_stream if event.type == "content_block_delta"])

    return ask


def _anthropic_helper(fake: FakeProvider) -> Any:
    client = anthropic.Anthropic(base_url=fake.anthropic_base_url, api_key=KEY, http_client=httpx2.Client())
    with client.messages.stream(model="claude-sonnet-4-5", max_tokens=64, messages=HI) as stream:
        return "".join(stream.text_stream)


def _openai_stream_helper(fake: FakeProvider) -> Any:
    client = openai.OpenAI(base_url=fake.openai_base_url, api_key=KEY, http_client=httpx.Client())
    with client.chat.completions.stream(model="gpt-4.1-mini", messages=HI) as stream:
        return "".join(event.delta for event in stream if event.type == "content.delta")


async def _async_openai_streaming_response(fake: FakeProvider) -> Any:
    client = openai.AsyncOpenAI(base_url=fake.openai_base_url, api_key=KEY, http_client=httpx.AsyncClient())
    raw = client.chat.completions.with_streaming_response.create(model="gpt-4.1-mini", messages=HI, stream=True)
    async with raw as response:
        chunks = await response.parse()
        return "".join([chunk.choices[0].delta.content or "" async for chunk in chunks if chunk.choices])


SDK_CLIENTS: dict[str, Ask] = {
    "openai-default": _openai_chat(lambda url: openai.OpenAI(base_url=url, api_key=KEY)),
    "openai-httpx": _openai_chat(lambda url: openai.OpenAI(base_url=url, api_key=KEY, http_client=httpx.Client())),
    "openai-httpx2": _openai_chat(lambda url: openai.OpenAI(base_url=url, api_key=KEY, http_client=httpx2.Client())),
    "async-openai-default": _openai_chat_async(lambda url: openai.AsyncOpenAI(base_url=url, api_key=KEY)),
    "async-openai-httpx": _openai_chat_async(
        lambda url: openai.AsyncOpenAI(base_url=url, api_key=KEY, http_client=httpx.AsyncClient())
    ),
    "anthropic-default": _anthropic(lambda url: anthropic.Anthropic(base_url=url, api_key=KEY)),
    "anthropic-httpx2": _anthropic(
        lambda url: anthropic.Anthropic(base_url=url, api_key=KEY, http_client=httpx2.Client())
    ),
    "async-anthropic-httpx2": _anthropic_async(
        lambda url: anthropic.AsyncAnthropic(base_url=url, api_key=KEY, http_client=httpx2.AsyncClient())
    ),
    "anthropic-stream-helper-httpx2": _anthropic_helper,
    "openai-stream-helper-httpx": _openai_stream_helper,
    "async-openai-streaming-response-httpx": _async_openai_streaming_response,
}


def recorded_and_replayed(fake: FakeProvider, ask: Ask) -> tuple[Any, Any, MemorySink, MemorySink]:
    """`ask(fake)` (sync or async) recorded in a run, then replayed from that run's snapshot."""

    async def main() -> tuple[Any, Any]:
        result = ask(fake)
        return (await result if asyncio.iscoroutine(result) else result), dump_snapshot()

    first, second = MemorySink(), MemorySink()
    result, snapshot = asyncio.run(run_with(main, sinks=[first]))
    again, _ = asyncio.run(run_with(main, sinks=[second], snapshot=snapshot))
    return result, again, first, second


def turn_ends(sink: MemorySink) -> list[dict[str, Any]]:
    return [dict(event) for event in sink.events if event["type"] == "turn:end"]


@pytest.mark.parametrize("name", list(SDK_CLIENTS))
def test_a_stream_on_any_client_records_and_replays_with_no_request(fake_provider: FakeProvider, name: str) -> None:
    fake_provider.reply({"text": TEXT})
    result, again, first, second = recorded_and_replayed(fake_provider, SDK_CLIENTS[name])
    assert result == again == TEXT
    assert fake_provider.count() == 1
    (recorded,) = turn_ends(first)
    (replayed,) = turn_ends(second)
    assert recorded["cache"] is False
    assert replayed["cache"] is True
    assert recorded["message"]["content"] == TEXT


def _litellm(streamed: bool, is_async: bool) -> Ask:
    async def ask(fake: FakeProvider) -> Any:
        kwargs: dict[str, Any] = {
            "model": "openai/gpt-4.1-mini",
            "messages": HI,
            "api_base": fake.openai_base_url,
            "api_key": KEY,
            "stream": streamed,
        }
        if is_async:
            answer = await litellm.acompletion(**kwargs)
            if streamed:
                return "".join([chunk.choices[0].delta.content or "" async for chunk in answer])
        else:
            answer = litellm.completion(**kwargs)
            if streamed:
                return "".join(chunk.choices[0].delta.content or "" for chunk in answer)
        return answer.choices[0].message.content

    return ask


@pytest.mark.parametrize("is_async", [False, True], ids=["completion", "acompletion"])
@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
def test_litellm_openai_route_records_and_replays_with_no_request(
    fake_provider: FakeProvider, streamed: bool, is_async: bool
) -> None:
    fake_provider.reply({"text": TEXT})
    result, again, first, second = recorded_and_replayed(fake_provider, _litellm(streamed, is_async))
    assert result == again == TEXT
    assert fake_provider.count() == 1
    assert [end["cache"] for end in turn_ends(first)] == [False]
    assert [end["cache"] for end in turn_ends(second)] == [True]
