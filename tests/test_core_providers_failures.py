"""Failed requests, through both adapters and their SDKs' own retries: one clear `ModelError` each.

Every status the issue names, as the fake provider answers it with the provider's own error body:
the message names provider, model, HTTP status, the server asked, the provider's words and request
id, and the retries spent; the key is never in it.
"""

from __future__ import annotations

from typing import Any

import pytest

from devtool.core import ModelError
from devtool.core.providers.failures import redact
from testkit.fake_provider import FakeProvider
from tests.adapters import KEY, adapter, ask

RETRY = {"retry_after": 0.01}


CASES = [
    # provider, config, replies, options, status, code, the provider's words, requests made
    ("openai", {"api_key": "sk-right-000000"}, [], {}, 401, "auth_error", "Incorrect API key provided", 1),
    ("openai", {"models": ["gpt-4.1"]}, [], {}, 404, "not_found", "The model `gpt-4.1-mini` does not exist", 1),
    ("openai", {}, [{"error": {"status": 429, **RETRY}}] * 3, {"max_retries": 2}, 429, "rate_limit", "Rate limit", 3),
    ("openai", {}, [{"error": {"status": 500, **RETRY}}], {"max_retries": 0}, 500, "server_error", "had an error", 1),
    ("openai", {}, [{"error": {"status": 503, **RETRY}}] * 2, {"max_retries": 1}, 503, "server_error", "overloaded", 2),
    ("anthropic", {"api_key": "sk-right-000000"}, [], {}, 401, "auth_error", "invalid x-api-key", 1),
    ("anthropic", {"models": ["claude-opus-4-6"]}, [], {}, 404, "not_found", "model: claude-haiku-4-5", 1),
    (
        "anthropic",
        {},
        [{"error": {"status": 429, **RETRY}}] * 2,
        {"max_retries": 1},
        429,
        "rate_limit",
        "rate limit",
        2,
    ),
    ("anthropic", {}, [{"error": {"status": 529, **RETRY}}], {"max_retries": 0}, 529, "server_error", "Overloaded", 1),
]


@pytest.mark.parametrize(
    ("provider", "config", "replies", "options", "status", "code", "said", "requests"),
    [pytest.param(*case, id=f"{case[0]}-{case[4]}") for case in CASES],
)
def test_an_error_status_becomes_a_model_error_naming_provider_model_status_and_message(
    fake_provider: FakeProvider,
    provider: str,
    config: dict[str, Any],
    replies: list[dict[str, Any]],
    options: dict[str, Any],
    status: int,
    code: str,
    said: str,
    requests: int,
) -> None:
    fake_provider.configure(**config)
    if replies:
        fake_provider.reply(*replies)
    model = adapter(provider, fake_provider, **options)
    with pytest.raises(ModelError) as caught:
        ask(model)
    error, text = caught.value, str(caught.value)
    assert text.startswith(f"{provider} model {model.id!r}: HTTP {status} ")
    assert said in text
    assert "request id req_fake" in text
    assert KEY not in text
    assert (error.provider, error.model_id, error.status, error.code) == (provider, model.id, status, code)
    path = "/chat/completions" if provider == "openai" else "/v1/messages"
    base = fake_provider.openai_base_url if provider == "openai" else fake_provider.anthropic_base_url
    assert error.details["endpoint"] == f"{base}{path}"
    assert fake_provider.count() == requests
    if requests > 1:
        assert text.endswith(f"after {requests - 1} {'retry' if requests == 2 else 'retries'}")


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_timeout_and_a_refused_connection_say_so(fake_provider: FakeProvider, provider: str) -> None:
    fake_provider.reply({"text": "too late", "delay": 3})
    late = adapter(provider, fake_provider, timeout=0.3, max_retries=0)
    with pytest.raises(
        ModelError, match=rf"{provider} model '{late.id}': no answer from .* before the timeout"
    ) as slow:
        ask(late)
    assert slow.value.code == "timeout"
    closed = FakeProvider("http://127.0.0.1:9")
    with pytest.raises(ModelError, match=r"cannot reach http://127\.0\.0\.1:9/.*, after 1 retry$") as refused:
        ask(adapter(provider, closed, max_retries=1))
    assert refused.value.code == "connection"


def test_redact_blanks_every_occurrence() -> None:
    assert redact("key sk-1 and sk-1 again", ["sk-1", ""]) == "key [redacted] and [redacted] again"
