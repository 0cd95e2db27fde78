"""`OpenAIChatModel` against the fake provider's Chat Completions, through the real `openai` SDK."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from devtool.core import ModelError
from devtool.core.model import Message, ModelReply, ToolDefinition
from devtool.core.providers.openai_chat import OpenAIChatModel
from testkit.fake_provider import FakeProvider

KEY = "sk-test-openai-0123456789"
SEARCH: ToolDefinition = {
    "name": "search",
    "description": "search the web",
    "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
}
HI: list[Message] = [{"role": "user", "content": "hi"}]


def model(fake: FakeProvider, model_id: str = "gpt-4.1-mini", **options: Any) -> OpenAIChatModel:
    return OpenAIChatModel(model_id, base_url=fake.openai_base_url, api_key=KEY, **options)


def ask(adapter: OpenAIChatModel, messages: list[Message] = HI, **kwargs: Any) -> ModelReply:
    kwargs.setdefault("schema", None)
    kwargs.setdefault("tools", [])
    return asyncio.run(adapter.call(messages, **kwargs))


def test_a_streamed_answer_arrives_in_pieces_with_its_usage_and_cost(fake_provider: FakeProvider) -> None:
    text = "Lisbon is hilly, sunny and full of custard tarts."
    fake_provider.reply({"text": text, "usage": {"input": 1000, "cached": 400, "output": 200, "reasoning": 50}})
    pieces: list[str] = []
    reply = ask(model(fake_provider), progress=pieces.append)
    assert reply["message"] == {"role": "assistant", "content": text}
    assert len(pieces) > 3
    assert "".join(pieces) == text
    assert reply["usage"] == {
        "promptTokens": 1000,
        "completionTokens": 200,
        "totalTokens": 1200,
        "details": {"cacheReadTokens": 400, "reasoningTokens": 50},
    }
    # gpt-4.1-mini: 600 fresh × $0.40 + 400 cached × $0.10 + 200 out × $1.60 per million = 600 µ$.
    assert reply["costs"] == {"micro_usd": 600}
    assert reply["finishReason"] == "stop"
    (sent,) = fake_provider.requests()
    assert sent["stream"] is True
    assert sent["body"]["stream_options"] == {"include_usage": True}
    assert sent["body"]["messages"] == [{"role": "user", "content": "hi"}]


def test_parallel_tool_calls_come_back_in_order_and_go_back_as_the_api_takes_them(
    fake_provider: FakeProvider,
) -> None:
    fake_provider.reply(
        {
            "tool_calls": [
                {"name": "search", "arguments": {"q": "lisbon"}, "id": "call_a"},
                {"name": "search", "arguments": {"q": "porto"}, "id": "call_b"},
            ]
        },
        {"text": "two cities"},
    )
    adapter = model(fake_provider)
    first = ask(adapter, tools=[SEARCH])
    assert first["message"] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_a", "name": "search", "arguments": '{"q":"lisbon"}'},
            {"id": "call_b", "name": "search", "arguments": '{"q":"porto"}'},
        ],
    }
    assert first["finishReason"] == "tool_calls"
    conversation: list[Message] = [
        *HI,
        first["message"],
        {"role": "tool", "tool_call_id": "call_a", "content": "sunny"},
        {"role": "tool", "tool_call_id": "call_b", "content": {"rain": True}},
    ]
    assert ask(adapter, conversation, tools=[SEARCH])["message"]["content"] == "two cities"
    sent = fake_provider.requests()[1]["body"]
    assert sent["tools"] == [{"type": "function", "function": SEARCH}]
    assert sent["messages"][1]["tool_calls"][1] == {
        "id": "call_b",
        "type": "function",
        "function": {"name": "search", "arguments": '{"q":"porto"}'},
    }
    assert sent["messages"][2:] == [
        {"role": "tool", "content": "sunny", "tool_call_id": "call_a"},
        {"role": "tool", "content": '{"rain":true}', "tool_call_id": "call_b"},
    ]


@pytest.mark.parametrize(
    ("schema", "strict"),
    [
        (
            {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
                "additionalProperties": False,
            },
            True,
        ),
        ({"type": "object", "properties": {"city": {"type": "string"}}}, False),
    ],
)
def test_a_schema_goes_as_a_json_schema_response_format_strict_when_it_can(
    fake_provider: FakeProvider, schema: dict[str, Any], strict: bool
) -> None:
    fake_provider.reply({"json": {"city": "Lisbon"}})
    reply = ask(model(fake_provider), schema=schema)
    assert reply["message"]["content"] == '{"city":"Lisbon"}'
    assert fake_provider.requests()[0]["body"]["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "answer", "schema": schema, "strict": strict},
    }


def test_a_server_that_refuses_json_schema_answers_is_asked_in_words_from_then_on(fake_provider: FakeProvider) -> None:
    fake_provider.configure(unsupported_params=["response_format"])
    fake_provider.reply({"json": {"city": "Lisbon"}}, {"json": {"city": "Porto"}})
    adapter = model(fake_provider)
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    system: Message = {"role": "system", "content": "You plan trips."}
    assert ask(adapter, [system, *HI], schema=schema)["message"]["content"] == '{"city":"Lisbon"}'
    assert ask(adapter, schema=schema)["message"]["content"] == '{"city":"Porto"}'
    refused, asked, again = fake_provider.requests()
    assert refused["status"] == 400
    assert "response_format" in refused["body"]
    assert "response_format" not in asked["body"]
    instruction = asked["body"]["messages"][0]["content"]
    assert instruction.startswith("You plan trips.\n\nAnswer with one JSON value")
    assert '{"type":"object","properties":{"city":{"type":"string"}}}' in instruction
    assert again["status"] == 200
    assert "response_format" not in again["body"]
    assert again["body"]["messages"][0]["role"] == "system"


def test_parameters_go_into_every_request_and_only_answer_changing_ones_into_params(
    fake_provider: FakeProvider,
) -> None:
    fake_provider.reply({"text": "ok"})
    adapter = model(fake_provider, temperature=0, max_tokens=64, user="alice", extra_headers={"X-Team": "blue"})
    assert adapter.params == {"temperature": 0, "max_tokens": 64}
    ask(adapter)
    (sent,) = fake_provider.requests()
    assert sent["body"]["temperature"] == 0
    assert sent["body"]["max_tokens"] == 64
    assert sent["body"]["user"] == "alice"
    assert sent["headers"]["x-team"] == "blue"
    with pytest.raises(ModelError, match="parameters must be JSON"):
        model(fake_provider, logit_bias={1, 2})


def test_without_streaming_the_whole_answer_comes_at_once(fake_provider: FakeProvider) -> None:
    fake_provider.reply({"tool_calls": [{"name": "search", "arguments": {"q": "x"}}], "text": "let me look"})
    pieces: list[str] = []
    reply = ask(model(fake_provider, stream=False), tools=[SEARCH], progress=pieces.append)
    assert reply["message"]["content"] == "let me look"
    assert reply["message"]["tool_calls"][0]["arguments"] == '{"q":"x"}'
    assert pieces == []
    assert fake_provider.requests()[0]["stream"] is False


def test_the_price_is_that_of_the_model_that_served_else_unknown(fake_provider: FakeProvider) -> None:
    fake_provider.reply(
        {"text": "a", "model": "gpt-4.1-2025-04-14", "usage": {"input": 1000, "output": 0}},
        {"text": "b", "usage": {"input": 1000, "output": 1000}},
    )
    assert ask(model(fake_provider, "gpt-4.1"))["costs"] == {"micro_usd": 2000}
    unknown = ask(model(fake_provider, "llama3.2:3b"))
    assert unknown["costs"] is None
    assert unknown["usage"]["totalTokens"] == 2000


def test_a_missing_key_is_a_clear_error_before_any_request(
    fake_provider: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    adapter = OpenAIChatModel("gpt-4.1-mini", base_url=fake_provider.openai_base_url)
    with pytest.raises(ModelError, match=r"openai model 'gpt-4.1-mini' cannot make its client: .*OPENAI_API_KEY"):
        ask(adapter)
    assert fake_provider.count() == 0
