"""`AnthropicModel` against the fake provider's Messages API, through the real `anthropic` SDK."""

from __future__ import annotations

from devtool.core.model import Message, ToolDefinition
from devtool.core.providers.anthropic_messages import ANSWER_TOOL, DEFAULT_MAX_TOKENS
from testkit.fake_provider import FakeProvider
from tests.adapters import HI, TOOL_ROUND, adapter, ask

WEATHER: ToolDefinition = {
    "name": "weather",
    "description": "today's weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def test_a_streamed_answer_with_cache_usage_and_the_system_prompt_apart(fake_provider: FakeProvider) -> None:
    text = "Porto is by the sea, and the wine is port."
    fake_provider.reply({"text": text, "usage": {"input": 1000, "cached": 300, "cache_write": 200, "output": 100}})
    pieces: list[str] = []
    conversation: list[Message] = [{"role": "system", "content": "You plan trips."}, *HI]
    reply = ask(adapter("anthropic", fake_provider), conversation, progress=pieces.append)
    assert reply["message"] == {"role": "assistant", "content": text}
    assert "".join(pieces) == text
    assert len(pieces) > 3
    assert reply["usage"] == {
        "promptTokens": 1000,
        "completionTokens": 100,
        "totalTokens": 1100,
        "details": {"cacheReadTokens": 300, "cacheWriteTokens": 200},
    }
    # claude-haiku-4-5: 500 fresh × $1 + 300 read × $0.10 + 200 written × $1.25 + 100 out × $5 per million.
    assert reply["costs"] == {"micro_usd": 1280}
    (sent,) = fake_provider.requests()
    assert sent["body"]["system"] == "You plan trips."
    assert sent["body"]["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    assert sent["body"]["max_tokens"] == DEFAULT_MAX_TOKENS
    assert sent["stream"] is True


def test_tool_calls_are_tool_use_blocks_and_their_results_one_user_message(fake_provider: FakeProvider) -> None:
    fake_provider.reply({"text": "Sunny and rainy."})
    reply = ask(adapter("anthropic", fake_provider), TOOL_ROUND, tools=[WEATHER])
    assert reply["message"]["content"] == "Sunny and rainy."
    sent = fake_provider.requests()[0]["body"]
    assert sent["tools"] == [
        {"name": "weather", "description": "today's weather", "input_schema": WEATHER["parameters"]}
    ]
    assert sent["messages"][1:] == [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me check both."},
                {"type": "tool_use", "id": "id_a", "name": "weather", "input": {"city": "Lisbon"}},
                {"type": "tool_use", "id": "id_b", "name": "weather", "input": {"city": "Porto"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "id_a", "content": "sunny"},
                {"type": "tool_result", "tool_use_id": "id_b", "content": '{"rain":true}'},
            ],
        },
    ]


def test_a_schema_alone_is_a_forced_tool_whose_input_is_the_answer(fake_provider: FakeProvider) -> None:
    fake_provider.reply({"json": {"city": "Lisbon"}})
    reply = ask(adapter("anthropic", fake_provider), schema=CITY)
    assert reply["message"] == {"role": "assistant", "content": '{"city":"Lisbon"}'}
    assert reply["finishReason"] == "stop"
    sent = fake_provider.requests()[0]["body"]
    assert sent["tool_choice"] == {"type": "tool", "name": ANSWER_TOOL}
    assert sent["tools"][-1]["input_schema"] == CITY


def test_a_schema_beside_tools_lets_the_model_call_either(fake_provider: FakeProvider) -> None:
    fake_provider.reply(
        {"tool_calls": [{"name": "weather", "arguments": {"city": "Lisbon"}}]},
        {"tool_calls": [{"name": ANSWER_TOOL, "arguments": {"city": "Lisbon"}}]},
    )
    model = adapter("anthropic", fake_provider)
    first = ask(model, schema=CITY, tools=[WEATHER])
    assert first["message"]["tool_calls"][0]["name"] == "weather"
    call_id = first["message"]["tool_calls"][0]["id"]
    conversation: list[Message] = [*HI, first["message"], {"role": "tool", "tool_call_id": call_id, "content": "sun"}]
    assert ask(model, conversation, schema=CITY, tools=[WEATHER])["message"]["content"] == '{"city":"Lisbon"}'
    sent = fake_provider.requests()[0]["body"]
    assert sent["tool_choice"] == {"type": "any"}
    assert [tool["name"] for tool in sent["tools"]] == ["weather", ANSWER_TOOL]


def test_without_streaming_and_with_params(fake_provider: FakeProvider) -> None:
    fake_provider.reply({"text": "short", "usage": {"input": 10, "output": 2}})
    model = adapter(
        "anthropic", fake_provider, stream=False, max_tokens=256, temperature=0.2, metadata={"user_id": "u1"}
    )
    assert model.params == {"max_tokens": 256, "temperature": 0.2}
    reply = ask(model)
    assert reply["message"]["content"] == "short"
    assert reply["usage"] == {"promptTokens": 10, "completionTokens": 2, "totalTokens": 12}
    (sent,) = fake_provider.requests()
    assert (sent["stream"], sent["body"]["max_tokens"], sent["body"]["metadata"]) == (False, 256, {"user_id": "u1"})
