"""What both adapters do alike (`adapter.py`): the answer read into our message, a client per event loop."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from devtool.core.model import ToolDefinition
from testkit.fake_provider import FakeProvider
from tests.adapters import HI, adapter, ask

LOOKUP: ToolDefinition = {
    "name": "lookup",
    "description": "look a city up",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize("stream", [True, False])
def test_parallel_tool_calls_come_back_in_order_as_our_message(
    fake_provider: FakeProvider, provider: str, stream: bool
) -> None:
    fake_provider.reply(
        {
            "text": "Let me look both up.",
            "tool_calls": [
                {"name": "lookup", "arguments": {"city": "Lisbon"}, "id": "id_a"},
                {"name": "lookup", "arguments": {"city": "Porto"}, "id": "id_b"},
            ],
        }
    )
    reply = ask(adapter(provider, fake_provider, stream=stream), tools=[LOOKUP])
    assert reply["message"] == {
        "role": "assistant",
        "content": "Let me look both up.",
        "tool_calls": [
            {"id": "id_a", "name": "lookup", "arguments": '{"city":"Lisbon"}'},
            {"id": "id_b", "name": "lookup", "arguments": '{"city":"Porto"}'},
        ],
    }
    assert reply["finishReason"] == "tool_calls"
    assert fake_provider.requests()[0]["stream"] is stream


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_one_client_per_event_loop_reused_within_it_and_closed_with_it(
    fake_provider: FakeProvider, provider: str
) -> None:
    fake_provider.reply({"text": "a"}, {"text": "b"}, {"text": "c"})
    model = adapter(provider, fake_provider)
    seen: list[Any] = []

    async def twice() -> None:
        for _ in range(2):
            await model.call(HI, schema=None, tools=[])
            seen.append(await model.client())

    asyncio.run(twice())
    asyncio.run(model.call(HI, schema=None, tools=[]))
    assert seen[0] is seen[1]
    assert seen[0].is_closed()  # closed when its loop shut down, its connections with it
