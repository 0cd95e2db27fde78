"""Real models in runs: named by string, recorded, replayed from the journal with no request, priced.

The agents run on the official SDKs pointed at the fake provider (a real process on a loopback
port); its request count is the ground truth of what reached the "provider".
"""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest

from devtool.core import JsonlSink, MemorySink, ModelError, ScriptedModel, create_agent, prompt, run_with
from devtool.core.debugger import dump_snapshot, restore_snapshot
from devtool.core.model import model_identity
from devtool.core.providers import model_named
from devtool.core.providers.anthropic_messages import AnthropicModel
from devtool.core.providers.openai_chat import OpenAIChatModel
from devtool.core.providers.pricing import default_price_table
from testkit.fake_provider import FakeProvider, FakeProviderProcess
from tests.trip_agents import script, trip

KEY = "sk-live-looking-KEY-5f1e2d3c4b5a6978"
MODELS = {"openai": "openai:gpt-4.1-mini", "anthropic": "anthropic:claude-haiku-4-5"}


@pytest.fixture
def env(fake_provider: FakeProvider, monkeypatch: pytest.MonkeyPatch) -> FakeProvider:
    """The SDKs' environment pointing at this test's namespace of the fake provider."""
    for name, value in fake_provider.env(api_key=KEY).items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("DEVTOOL_MODEL", raising=False)
    return fake_provider


def record(model: str, **options: Any) -> tuple[dict[str, Any], list[dict[str, Any]], Counter[str]]:
    ran: Counter[str] = Counter()
    sink = MemorySink()
    agent = trip(model, ran, **options)
    result = asyncio.run(run_with(lambda: agent({}), sinks=[sink]))
    return result, list(sink.events), ran


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_recorded_multi_agent_run_replays_with_no_request_and_a_changed_prompt_asks_again(
    env: FakeProvider, provider: str
) -> None:
    name = MODELS[provider]
    requests = script(env)
    result, _, ran = record(name)
    assert result["plan"] == {"title": "Two cities", "days": 4}
    assert env.count() == requests
    assert ran == Counter(search=2, weather=2)
    snapshot = result["snapshot"]

    replayed: Counter[str] = Counter()
    again = asyncio.run(run_with(lambda: trip(name, replayed)({}), snapshot=snapshot))
    assert again["plan"] == result["plan"]
    assert env.count() == requests  # the replay made no request at all
    assert replayed == Counter()  # nor ran a tool

    script(env, writer_says="draft a plan from")
    changed: Counter[str] = Counter()
    edited = asyncio.run(run_with(lambda: trip(name, changed, writer_says="draft a plan from")({}), snapshot=snapshot))
    assert edited["plan"] == result["plan"]
    assert env.count() == requests + 1  # exactly the changed prompt's one request
    assert "draft a plan from" in orjson.dumps(env.requests()[-1]["body"]).decode()
    assert changed == Counter()


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_each_request_is_priced_from_the_table_and_the_run_sums_them(env: FakeProvider, provider: str) -> None:
    script(env)
    result, events, _ = record(MODELS[provider])
    calls = [e for e in events if e["type"] == "model:call:end"]
    assert len(calls) == 5
    model_id = MODELS[provider].split(":", 1)[1]
    price = default_price_table().price(provider, model_id)
    assert price is not None
    for call in calls:
        usage = call["usage"]
        expected = round(usage["promptTokens"] * price.input + usage["completionTokens"] * price.output)
        assert call["costs"] == {"micro_usd": expected}
    total = sum(call["costs"]["micro_usd"] for call in calls)
    metrics = next(e for e in events if e["type"] == "runWith:end")["metrics"]
    assert metrics["costs"] == {"micro_usd": total}
    assert (metrics["modelCalls"], metrics["unpricedCalls"]) == (5, 0)
    assert metrics["totalTokens"] == sum(call["usage"]["totalTokens"] for call in calls)
    lead = result["snapshot"]["root"]["children"]["root/agent:lead:0"]
    assert lead["budgetState"]["aggregate"]["costs"] == {"micro_usd": total}
    writer = lead["children"]["root/agent:lead:0/agent:writer:0"]
    assert writer["budgetState"]["own"]["callCount"] == 1


def test_an_unknown_models_cost_is_unknown_not_zero(env: FakeProvider) -> None:
    env.reply({"text": "hello from a local model"})

    async def ask(props: Any) -> Any:
        return await prompt("hi")

    sink = MemorySink()
    asyncio.run(run_with(lambda: create_agent("local", ask, model="openai:llama3.2:3b")(None), sinks=[sink]))
    (call,) = [e for e in sink.events if e["type"] == "model:call:end"]
    assert call["costs"] is None
    assert call["usage"]["totalTokens"] > 0
    metrics = sink.events[-1]["metrics"]
    assert metrics["costs"] == {}
    assert metrics["unpricedCalls"] == 1


def test_a_streamed_turn_reports_its_growing_answer_and_restore_ignores_it(env: FakeProvider) -> None:
    text = "Day one: the Alfama at dawn, then pastries in Belém, then a tram up to the castle at dusk."
    env.reply({"text": text, "chunk_size": 4, "chunk_delay": 0.03})

    async def ask(props: Any) -> Any:
        return await prompt("plan day one")

    sink = MemorySink()
    box: dict[str, Any] = {}

    async def main() -> Any:
        answer = await create_agent("planner", ask, model=MODELS["openai"])(None)
        box["dump"] = dump_snapshot()
        return answer

    assert asyncio.run(run_with(main, sinks=[sink])) == text
    events = sink.events
    progress = [e for e in events if e["type"] == "turn:progress"]
    turn_end = next(e for e in events if e["type"] == "turn:end")
    assert len(progress) >= 3  # ~0.7 s of streaming, a progress event at most every 0.2 s
    assert all(text.startswith(e["text"]) for e in progress)
    assert [len(e["text"]) for e in progress] == sorted({len(e["text"]) for e in progress})
    assert all(e["trace"]["spanId"] == turn_end["trace"]["spanId"] for e in progress)
    assert all(e["callId"] == turn_end["callId"] and e["timestamp"] < turn_end["timestamp"] for e in progress)
    assert turn_end["message"]["content"] == text
    call_end = next(e for e in events if e["type"] == "model:call:end")
    assert 0 < call_end["ttft"] < call_end["duration"]
    # The journal holds the final message only, and a restore is the same with or without progress.
    (entry,) = box["dump"]["root"]["children"]["root/agent:planner:0"]["journal"]["prompt"].values()
    assert entry["output"] == {"role": "assistant", "content": text}
    without = [e for e in events if e["type"] != "turn:progress"]
    for span, anchor in (
        (None, "after"),
        (turn_end["trace"]["spanId"], "before"),
        (turn_end["trace"]["spanId"], "after"),
    ):
        assert restore_snapshot(events, span_id=span, anchor=anchor) == restore_snapshot(
            without, span_id=span, anchor=anchor
        )


def test_a_failed_request_is_recorded_on_its_turn_and_no_key_is_stored_or_logged(
    env: FakeProvider, fake_provider_process: FakeProviderProcess, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    env.configure(api_key="sk-another-key-entirely-000")

    async def ask(props: Any) -> Any:
        return await prompt("hi")

    trace = tmp_path / "trace.jsonl"
    with pytest.raises(ModelError) as caught:
        asyncio.run(run_with(lambda: create_agent("a", ask, model=MODELS["openai"])(None), sinks=[JsonlSink(trace)]))
    assert "HTTP 401" in str(caught.value)
    events = [orjson.loads(line) for line in trace.read_bytes().splitlines()]
    turn_end = next(e for e in events if e["type"] == "turn:end")
    assert turn_end["success"] is False
    assert turn_end["error"]["details"] == {
        "provider": "openai",
        "modelId": "gpt-4.1-mini",
        "status": 401,
        "code": "auth_error",
        "endpoint": f"{env.openai_base_url}/chat/completions",
    }
    assert "Incorrect API key provided" in turn_end["error"]["message"]
    env.configure(api_key=KEY)
    env.reply({"text": "fine"})

    async def main() -> Any:
        await create_agent("a", ask, model=MODELS["openai"])(None)
        return dump_snapshot()

    snapshot = asyncio.run(run_with(main, sinks=[JsonlSink(trace)]))
    assert env.count() == 2
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "/chat/completions" in logged  # the SDK's debug log was captured: it just holds no key
    for where, text in {
        "events": trace.read_text(),
        "snapshot": orjson.dumps(snapshot).decode(),
        "client log": logged,
        "provider log": fake_provider_process.log_text(),
    }.items():
        assert KEY not in text, where
    assert "[not logged]" in fake_provider_process.log_text()


def test_models_by_name_and_by_default(env: FakeProvider, monkeypatch: pytest.MonkeyPatch) -> None:
    assert isinstance(model_named("openai:gpt-4.1-mini"), OpenAIChatModel)
    assert model_named("openai:gpt-4.1-mini") is model_named(" openai:gpt-4.1-mini ")
    assert isinstance(model_named("anthropic:claude-sonnet-4-5"), AnthropicModel)
    assert model_named("openai:llama3.2:3b").id == "llama3.2:3b"
    for bad, said in (
        ("gpt-4.1", "is not PROVIDER:MODEL"),
        ("openai:", "is not PROVIDER:MODEL"),
        ("gemini:x", "unknown model provider 'gemini'"),
    ):
        with pytest.raises(ModelError, match=said):
            model_named(bad)

    async def ask(props: Any) -> Any:
        return await prompt("which model?")

    with pytest.raises(ModelError, match="set DEVTOOL_MODEL"):
        asyncio.run(run_with(lambda: create_agent("a", ask)(None)))
    monkeypatch.setenv("DEVTOOL_MODEL", MODELS["anthropic"])
    env.reply({"text": "claude, by default"}, api="anthropic.messages", model="claude-haiku-4-5")
    assert asyncio.run(run_with(lambda: create_agent("a", ask)(None))) == "claude, by default"


def test_a_missing_sdk_says_which_extra_to_install() -> None:
    # A Python where the openai package cannot be imported, as where it is not installed.
    probe = (
        "import sys; sys.modules['openai'] = None;"
        "from devtool.core.providers import model_named; model_named('openai:x')"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert out.returncode == 1
    assert out.stderr.strip().splitlines()[-1] == (
        "devtool.core.errors.ModelError: the openai models need the openai SDK, which is not installed: "
        "pip install 'devtool[openai]'"
    )


def test_params_are_part_of_the_hash_and_scripted_models_hash_as_before(env: FakeProvider) -> None:
    assert model_identity(ScriptedModel([])) == {"id": "scripted-model", "provider": "scripted"}
    plain = OpenAIChatModel("gpt-4.1-mini")
    tuned = OpenAIChatModel("gpt-4.1-mini", temperature=0, user="not-hashed")
    # Another base URL (another name of the same server) and another key: a proxy, say.
    elsewhere = OpenAIChatModel(
        "gpt-4.1-mini", base_url=env.openai_base_url.replace("127.0.0.1", "localhost"), api_key="k"
    )
    assert model_identity(plain) == model_identity(elsewhere) == {"id": "gpt-4.1-mini", "provider": "openai"}
    assert model_identity(tuned) == {"id": "gpt-4.1-mini", "provider": "openai", "params": {"temperature": 0}}

    async def ask(props: Any) -> Any:
        return await prompt("same words")

    def hashes(model: Any) -> list[str]:
        env.reply({"text": "same answer"})
        sink = MemorySink()
        asyncio.run(run_with(lambda: create_agent("a", ask, model=model)(None), sinks=[sink]))
        return [e["contentHash"] for e in sink.events if e["type"] == "turn:end"]

    assert hashes(plain) == hashes(elsewhere) != hashes(tuned)
