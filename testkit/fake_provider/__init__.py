"""A fake model provider that speaks OpenAI's Chat Completions and Responses APIs and Anthropic's Messages
over real HTTP.

No provider is reachable from the tests, so the official SDKs are pointed at this server by base URL
(`OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`). It answers as the providers do (JSON or server-sent events,
tool calls, usage, their error bodies and statuses), from rules a test adds through its control API,
and counts what it answered, so a test can say "the replay made 0 requests".

- `server.py`: the app (provider APIs, control API, request log) and how a request is answered;
- `script.py`: rules, replies, config and namespaces, as the control API takes them;
- `dialect.py`: what one provider API is to the fake; `openai_chat.py`, `openai_responses.py`,
  `anthropic_messages.py`: the three (`match.api`: `openai.chat`, `openai.responses`, `anthropic.messages`);
- `client.py`: `FakeProviderProcess` (start the process) and `FakeProvider` (drive one namespace);
- `fixtures.py`: the pytest fixtures `fake_provider_process` and `fake_provider`.

A reply: `{"text": "..."}`, `{"tool_calls": [{"name": "search", "arguments": {...}, "id": "..."?}]}`
(several: parallel calls), `{"json": VALUE}` (a structured answer), `{"error": {"status": 429,
"message"?, "type"?, "code"?, "retry_after"?}}` (the provider's body for that status), with optional
`usage` (`input` (all prompt tokens), `output`, `cached`, `cache_write`, `reasoning`), `model` (the
model the answer says served it), `finish`, `delay` (seconds before answering), `chunk_delay` and
`chunk_size` (pacing of a streamed answer).
"""

from __future__ import annotations

from testkit.fake_provider.client import DEFAULT_KEY, FakeProvider, FakeProviderProcess

__all__ = ["DEFAULT_KEY", "FakeProvider", "FakeProviderProcess"]
