"""What the adapter tests share: an adapter pointed at a namespace of the fake provider, and one request."""

from __future__ import annotations

import asyncio
from typing import Any

from devtool.core.model import Message, ModelReply
from devtool.core.providers.adapter import ProviderModel
from devtool.core.providers.anthropic_messages import AnthropicModel
from devtool.core.providers.openai_chat import OpenAIChatModel
from testkit.fake_provider import FakeProvider

KEY = "sk-test-adapters-0123456789"
HI: list[Message] = [{"role": "user", "content": "hi"}]
# After two parallel tool calls (arguments as JSON text and as an object) and their two results.
TOOL_ROUND: list[Message] = [
    *HI,
    {
        "role": "assistant",
        "content": "Let me check both.",
        "tool_calls": [
            {"id": "id_a", "name": "weather", "arguments": '{"city":"Lisbon"}'},
            {"id": "id_b", "name": "weather", "arguments": {"city": "Porto"}},
        ],
    },
    {"role": "tool", "tool_call_id": "id_a", "content": "sunny"},
    {"role": "tool", "tool_call_id": "id_b", "content": {"rain": True}},
]
DEFAULT_MODEL = {"openai": "gpt-4.1-mini", "anthropic": "claude-haiku-4-5"}


def adapter(provider: str, fake: FakeProvider, model_id: str | None = None, **options: Any) -> ProviderModel:
    """`provider`'s adapter for `model_id` (a default per provider) on `fake`, with the key `KEY`."""
    model_id = model_id or DEFAULT_MODEL[provider]
    if provider == "openai":
        return OpenAIChatModel(model_id, base_url=fake.openai_base_url, api_key=KEY, **options)
    return AnthropicModel(model_id, base_url=fake.anthropic_base_url, api_key=KEY, **options)


def ask(model: ProviderModel, messages: list[Message] = HI, **kwargs: Any) -> ModelReply:
    """One `call` (no schema, no tools unless given), in an event loop of its own."""
    kwargs.setdefault("schema", None)
    kwargs.setdefault("tools", [])
    return asyncio.run(model.call(messages, **kwargs))
