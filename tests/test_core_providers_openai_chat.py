"""`OpenAIChatModel` against the fake provider's Chat Completions, through the real `openai` SDK."""

from __future__ import annotations

from typing import Any

import pytest

from devtool.core import ModelError
from devtool.core.model import Message, ToolDefinition
from devtool.core.providers.openai_chat import OpenAIChatModel
from testkit.fake_provider import FakeProvider
from tests.adapters import HI, TOOL_ROUND, adapter, ask

SEARCH: ToolDefinition = {
    "name": "search",
    "description": "search the web",
    "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
}


def test_a_streamed_answer_arrives_in_pieces_with_its_usage_and_cost(fake_provider: FakeProvider) -> None:
    text = "Lisbon is hilly, sunny and full of custard tarts."
    fake_provider.reply({"text": text, "usage": {"input": 1000, "cached": 400, "output": 200, "reasoning": 50}})
    pieces: list[str] = []
    reply = ask(adapter("openai", fake_provider), progress=pieces.append)
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


def test_tool_calls_and_their_results_go_as_chat_completions_takes_them(fake_provider: FakeProvider) -> None:
    fake_provider.reply({"text": "two cities"})
    assert ask(adapter("openai", fake_provider), TOOL_ROUND, tools=[SEARCH])["message"]["content"] == "two cities"
    sent = fake_provider.requests()[0]["body"]
    assert sent["tools"] == [{"type": "function", "function": SEARCH}]
    assert sent["messages"][1] == {
        "role": "assistant",
        "content": "Let me check both.",
        "tool_calls": [
            {"id": "id_a", "type": "function", "function": {"name": "weather", "arguments": '{"city":"Lisbon"}'}},
            {"id": "id_b", "type": "function", "function": {"name": "weather", "arguments": '{"city":"Porto"}'}},
        ],
    }
    assert sent["messages"][2:] == [
        {"role": "tool", "content": "sunny", "tool_call_id": "id_a"},
        {"role": "tool", "content": '{"rain":true}', "tool_call_id": "id_b"},
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
    reply = ask(adapter("openai", fake_provider), schema=schema)
    assert reply["message"]["content"] == '{"city":"Lisbon"}'
    assert fake_provider.requests()[0]["body"]["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "answer", "schema": schema, "strict": strict},
    }


def test_a_server_that_refuses_json_schema_answers_is_asked_in_words_from_then_on(fake_provider: FakeProvider) -> None:
    fake_provider.configure(unsupported_params=["response_format"])
    fake_provider.reply({"json": {"city": "Lisbon"}}, {"json": {"city": "Porto"}})
    model = adapter("openai", fake_provider)
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    system: Message = {"role": "system", "content": "You plan trips."}
    assert ask(model, [system, *HI], schema=schema)["message"]["content"] == '{"city":"Lisbon"}'
    assert ask(model, schema=schema)["message"]["content"] == '{"city":"Porto"}'
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
    model = adapter(
        "openai", fake_provider, temperature=0, max_tokens=64, user="alice", extra_headers={"X-Team": "blue"}
    )
    assert model.params == {"temperature": 0, "max_tokens": 64}
    ask(model)
    (sent,) = fake_provider.requests()
    assert sent["body"]["temperature"] == 0
    assert sent["body"]["max_tokens"] == 64
    assert sent["body"]["user"] == "alice"
    assert sent["headers"]["x-team"] == "blue"
    with pytest.raises(ModelError, match="parameters must be JSON"):
        adapter("openai", fake_provider, logit_bias={1, 2})


def test_without_streaming_the_whole_answer_comes_at_once(fake_provider: FakeProvider) -> None:
    fake_provider.reply({"tool_calls": [{"name": "search", "arguments": {"q": "x"}}], "text": "let me look"})
    pieces: list[str] = []
    reply = ask(adapter("openai", fake_provider, stream=False), tools=[SEARCH], progress=pieces.append)
    assert reply["message"]["content"] == "let me look"
    assert reply["message"]["tool_calls"][0]["arguments"] == '{"q":"x"}'
    assert pieces == []
    assert fake_provider.requests()[0]["stream"] is False


def test_the_price_is_that_of_the_model_that_served_else_unknown(fake_provider: FakeProvider) -> None:
    fake_provider.reply(
        {"text": "a", "model": "gpt-4.1-2025-04-14", "usage": {"input": 1000, "output": 0}},
        {"text": "b", "usage": {"input": 1000, "output": 1000}},
    )
    assert ask(adapter("openai", fake_provider, "gpt-4.1"))["costs"] == {"micro_usd": 2000}
    unknown = ask(adapter("openai", fake_provider, "llama3.2:3b"))
    assert unknown["costs"] is None
    assert unknown["usage"]["totalTokens"] == 2000


def test_a_missing_key_is_a_clear_error_before_any_request(
    fake_provider: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = OpenAIChatModel("gpt-4.1-mini", base_url=fake_provider.openai_base_url)
    with pytest.raises(ModelError, match=r"openai model 'gpt-4.1-mini' cannot make its client: .*OPENAI_API_KEY"):
        ask(model)
    assert fake_provider.count() == 0
