"""The fake provider itself: its control API, rule matching, namespaces, wire formats and its log.

Requests here are plain HTTP (urllib), so what is asserted is the server's own behaviour; the
adapter tests show that the official SDKs read its answers.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from testkit.fake_provider import FakeProvider, FakeProviderProcess


def post(url: str, body: Any, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(
        url, data=data, method="POST", headers={"Content-Type": "application/json", **(headers or {})}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def chat(fake: FakeProvider, **body: Any) -> tuple[int, dict[str, str], bytes]:
    request = {"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "hi"}], **body}
    return post(f"{fake.openai_base_url}/chat/completions", request, {"Authorization": "Bearer sk-x"})


def frames(raw: bytes) -> list[str]:
    return [line.removeprefix("data: ") for line in raw.decode().splitlines() if line.startswith("data: ")]


def test_rules_answer_in_order_by_match_and_times_and_an_unmatched_request_is_a_500(
    fake_provider: FakeProvider,
) -> None:
    fake_provider.reply({"text": "first"}, {"text": "second"}, contains="hi")
    fake_provider.reply({"text": "always"}, times=None, model="gpt-4o")
    answers = [json.loads(chat(fake_provider)[2])["choices"][0]["message"]["content"] for _ in range(2)]
    assert answers == ["first", "second"]
    status, headers, body = chat(fake_provider)
    assert status == 500
    assert "no scripted reply matches this request" in json.loads(body)["error"]["message"]
    assert headers["x-request-id"].startswith("req_fake")
    for _ in range(3):
        assert json.loads(chat(fake_provider, model="gpt-4o")[2])["choices"][0]["message"]["content"] == "always"
    assert fake_provider.count() == 6
    assert [r["status"] for r in fake_provider.requests()] == [200, 200, 500, 200, 200, 200]
    assert [r["rule"] for r in fake_provider.requests()][:3] == [0, 1, None]
    assert fake_provider.rules()[0] == {"match": {"contains": "hi"}, "left": 0}


def test_namespaces_do_not_see_each_others_rules_or_requests(fake_provider_process: FakeProviderProcess) -> None:
    one, two = fake_provider_process.namespace("ns-one"), fake_provider_process.namespace("ns-two")
    one.reply({"text": "one"})
    assert chat(two)[0] == 500
    assert json.loads(chat(one)[2])["choices"][0]["message"]["content"] == "one"
    assert (one.count(), two.count()) == (1, 1)
    one.reset()
    assert (one.count(), one.rules()) == (0, [])


@pytest.mark.parametrize(
    ("rule", "said"),
    [
        ({"reply": {"txt": "x"}}, "reply has an unknown field 'txt'"),
        ({"reply": {}}, "a reply needs text, tool_calls, json or error"),
        ({"match": {"prompt": "x"}, "reply": {"text": "x"}}, "match has an unknown field 'prompt'"),
        ({"reply": {"error": {"status": 200}}}, "reply.error.status must be an integer of at least 400"),
        ({"reply": {"text": "x"}, "times": 0}, "rule times must be a positive integer or null"),
        ({"reply": {"tool_calls": [{"arguments": {}}]}}, "reply.tool_calls[0] must be an object with a name"),
    ],
)
def test_a_bad_rule_is_refused_when_added_saying_why(
    fake_provider: FakeProvider, rule: dict[str, Any], said: str
) -> None:
    with pytest.raises(ValueError, match="fake provider refused POST rules") as caught:
        fake_provider.add(rule)
    assert said in str(caught.value)
    with pytest.raises(ValueError, match="config has an unknown field 'key'"):
        fake_provider.configure(key="x")


def test_an_openai_stream_is_chunks_then_finish_then_usage_then_done(fake_provider: FakeProvider) -> None:
    fake_provider.reply(
        {"text": "Hello world!", "chunk_size": 5, "tool_calls": [{"name": "f", "arguments": {"a": 1}, "id": "call_1"}]},
        {"text": "no usage asked"},
    )
    status, headers, raw = chat(fake_provider, stream=True, stream_options={"include_usage": True})
    assert (status, headers["content-type"].split(";")[0]) == (200, "text/event-stream")
    data = frames(raw)
    assert data[-1] == "[DONE]"
    chunks = [json.loads(frame) for frame in data[:-1]]
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert [c["choices"][0]["delta"].get("content") for c in chunks[1:4]] == ["Hello", " worl", "d!"]
    tool_deltas = [c["choices"][0]["delta"]["tool_calls"][0] for c in chunks[4:7]]
    assert tool_deltas[0] == {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": "f", "arguments": ""},
    }
    assert "".join(d["function"]["arguments"] for d in tool_deltas[1:]) == '{"a":1}'
    assert chunks[7]["choices"][0]["finish_reason"] == "tool_calls"
    assert chunks[8]["choices"] == []
    assert chunks[8]["usage"]["completion_tokens"] > 0
    plain = [json.loads(frame) for frame in frames(chat(fake_provider, stream=True)[2])[:-1]]
    assert all("usage" not in chunk for chunk in plain)


def test_an_anthropic_stream_has_the_messages_event_sequence(fake_provider: FakeProvider) -> None:
    fake_provider.reply({"text": "Hi!", "tool_calls": [{"name": "f", "arguments": {"a": 1}}]})
    body = {
        "model": "claude-haiku-4-5",
        "max_tokens": 100,
        "stream": True,
        "messages": [{"role": "user", "content": "hi"}],
    }
    status, headers, raw = post(f"{fake_provider.anthropic_base_url}/v1/messages", body, {"x-api-key": "k"})
    assert status == 200
    assert headers["request-id"].startswith("req_fake")
    events = [line.removeprefix("event: ") for line in raw.decode().splitlines() if line.startswith("event: ")]
    assert events == [
        "message_start",
        "ping",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert json.loads(frames(raw)[-2])["delta"]["stop_reason"] == "tool_use"


def test_a_responses_stream_has_openais_event_sequence_and_the_whole_response_last(fake_provider: FakeProvider) -> None:
    fake_provider.reply({"text": "Hi there", "chunk_size": 4, "tool_calls": [{"name": "f", "arguments": {"a": 1}}]})
    body = {"model": "gpt-4.1-mini", "input": [{"role": "user", "content": "hi"}], "stream": True, "instructions": "x"}
    status, _, raw = post(f"{fake_provider.openai_base_url}/responses", body, {"Authorization": "Bearer k"})
    assert status == 200
    events = [line.removeprefix("event: ") for line in raw.decode().splitlines() if line.startswith("event: ")]
    assert events == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    data = [json.loads(frame) for frame in frames(raw)]
    assert [d["sequence_number"] for d in data] == list(range(len(data)))
    assert [d["type"] for d in data] == events
    final = data[-1]["response"]
    assert [item["type"] for item in final["output"]] == ["message", "function_call"]
    assert final["output"][1]["arguments"] == '{"a":1}'
    assert final["usage"]["total_tokens"] == final["usage"]["input_tokens"] + final["usage"]["output_tokens"]
    assert fake_provider.requests()[0]["api"] == "openai.responses"
    fake_provider.reply({"json": {"ok": True}, "finish": "length"})
    status, _, raw = post(f"{fake_provider.openai_base_url}/responses", {"model": "m", "input": "hi"})
    whole = json.loads(raw)
    assert (whole["status"], whole["output"][0]["content"][0]["text"]) == ("incomplete", '{"ok":true}')
    status, _, raw = post(f"{fake_provider.openai_base_url}/responses", {"model": "m"})
    assert status == 400
    assert json.loads(raw)["error"]["message"] == "Missing required parameter: 'input'."


def test_provider_errors_have_the_providers_bodies(fake_provider: FakeProvider) -> None:
    fake_provider.configure(api_key="sk-right-key-1234567")
    status, _, body = chat(fake_provider)
    assert status == 401
    error = json.loads(body)["error"]
    assert (error["type"], error["code"]) == ("invalid_request_error", "invalid_api_key")
    assert error["message"].startswith("Incorrect API key provided: ****. You can find your API key at")
    anthropic = {"model": "claude-x", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}
    status, _, body = post(f"{fake_provider.anthropic_base_url}/v1/messages", anthropic)
    assert status == 401
    assert json.loads(body)["error"] == {"type": "authentication_error", "message": "x-api-key header is required"}
    fake_provider.configure(api_key=None)
    fake_provider.reply({"error": {"status": 429, "retry_after": 1.5}})
    status, headers, body = chat(fake_provider)
    assert (status, headers["retry-after"], headers["retry-after-ms"]) == (429, "2", "1500")
    assert json.loads(body)["error"]["code"] == "rate_limit_exceeded"
    status, _, body = post(f"{fake_provider.openai_base_url}/chat/completions", b"{not json")
    assert status == 400


def test_the_log_has_every_request_but_never_a_credential(
    fake_provider: FakeProvider, fake_provider_process: FakeProviderProcess
) -> None:
    fake_provider.reply({"text": "ok"})
    chat(fake_provider, user="someone@example.com")
    lines = [json.loads(line) for line in fake_provider_process.log_text().splitlines()]
    (mine,) = [line for line in lines if line["namespace"] == fake_provider.namespace]
    assert mine["headers"]["authorization"] == "[not logged]"
    assert "someone@example.com" in mine["body"]
    assert "sk-x" not in json.dumps(mine)
