"""The playground through HTTP, against the fake provider: a recorded turn and an OTLP chat span asked
again with edited messages (one provider request each), streamed, saved as a fork a replay continues
from; bad input answered in words, never a 5xx, with nothing asked or journaled."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from starlette.testclient import TestClient

import devtool.instrument
from devtool.core import ScriptedModel, create_agent, prompt, run_with
from devtool.store import Store, get_snapshot, load_file
from devtool.web import create_app
from devtool.web.state import AppState
from testkit.fake_provider import FakeProvider
from tests.otlp_factory import genai_run, write_jsonl
from tests.web_runs import html, one, record

BASE = "http://127.0.0.1:8484"
KEY = "sk-playground-test-0123456789"


@pytest.fixture
def client(store: Store, fake_provider: FakeProvider, monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    # The server's environment, as `devtool serve` would be started with it.
    monkeypatch.setenv("OPENAI_BASE_URL", fake_provider.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with TestClient(create_app(store), base_url=BASE, follow_redirects=False) as client:
        client.headers.update({"Origin": BASE, "X-DevTool-CSRF": AppState.of(client.app).access.csrf})  # type: ignore[arg-type]
        yield client


def scripted() -> tuple[ScriptedModel, Any]:
    model = ScriptedModel(lambda messages: f"recorded answer to {messages[-1]['content']}")
    system = {"role": "system", "content": "Be brief."}
    agent = create_agent("asker", lambda props: prompt([system, {"role": "user", "content": "hi"}], model=model))
    return model, agent


def recorded(store: Store, tmp_path: Path) -> tuple[str, str]:
    """A run with one `prompt()` turn: (trace id, the turn's span id)."""
    _, agent = scripted()
    trace_id = record(store, tmp_path, agent)
    (span,) = store.query("SELECT span_id FROM spans WHERE trace_id = ? AND kind = 'turn'", [trace_id])[0]
    return trace_id, span


def edited_messages(text: str) -> list[dict[str, Any]]:
    return [{"role": "system", "content": "Be very brief."}, {"role": "user", "content": text}]


def test_a_recorded_turn_asked_again_with_edited_messages(
    client: TestClient, store: Store, tmp_path: Path, fake_provider: FakeProvider
) -> None:
    trace_id, span = recorded(store, tmp_path)
    page = html(client.get(f"/runs/{trace_id}/spans/{span}/playground").text)
    assert "Be brief." in one(page, "#pg-messages").text()
    assert "recorded answer to hi" in one(page, "#pg-recorded").text()
    fake_provider.reply({"text": "a new answer", "usage": {"input": 12, "output": 3}})
    body = {
        "messages": edited_messages("hello"),
        "model": "openai:gpt-4.1-mini",
        "params": {"temperature": 0},
        "tools": [],
    }
    answer = client.post(f"/runs/{trace_id}/spans/{span}/playground", json=body, headers={"Accept": "application/json"})
    assert answer.status_code == 200, answer.text
    got = answer.json()
    assert got["text"] == "a new answer"
    assert got["usage"]["promptTokens"] == 12
    assert got["costs"]["micro_usd"] > 0
    (sent,) = fake_provider.requests()
    assert sent["body"]["messages"][0] == {"role": "system", "content": "Be very brief."}
    assert sent["body"]["temperature"] == 0
    assert KEY not in answer.text
    assert store.query("SELECT count(DISTINCT trace_id) FROM events") == [(1,)]  # nothing recorded


def test_an_otlp_chat_span_without_a_journal_is_asked_again(
    client: TestClient, store: Store, tmp_path: Path, fake_provider: FakeProvider
) -> None:
    (trace_id,) = load_file(store, write_jsonl(tmp_path / "otlp.jsonl", [genai_run()])).traces
    spans = store.query("SELECT span_id FROM spans WHERE trace_id = ? AND kind = 'turn' ORDER BY start_ts", [trace_id])
    last = spans[-1][0]
    page = html(client.get(f"/runs/{trace_id}/spans/{last}/playground").text)
    messages = json.loads(one(page, "#pg-messages").text())
    assert messages[0]["content"] == "Weather in Paris?"
    assert one(page, "#pg-model").attributes["value"] == "openai:gpt-4.1-mini"
    messages[0]["content"] = "Weather in Rome?"
    fake_provider.reply({"text": "Rainy."})
    body = {"messages": messages, "model": "openai:gpt-4.1-mini", "params": {}, "tools": []}
    answer = client.post(f"/runs/{trace_id}/spans/{last}/playground", json=body, headers={"Accept": "application/json"})
    assert answer.status_code == 200, answer.text
    assert answer.json()["text"] == "Rainy."
    assert fake_provider.count() == 1
    assert "Weather in Rome?" in json.dumps(fake_provider.requests()[0]["body"]["messages"])


def test_the_page_streams_the_runs_and_saves_a_variant_that_replay_continues_from(
    client: TestClient, store: Store, tmp_path: Path, fake_provider: FakeProvider
) -> None:
    trace_id, span = recorded(store, tmp_path)
    fake_provider.reply({"text": "streamed variant answer", "chunk_size": 4}, times=None)
    form = {"messages": json.dumps(edited_messages("hi")), "model": "openai:gpt-4.1-mini", "runs": "2"}
    runs = client.post(f"/runs/{trace_id}/spans/{span}/playground", data=form, headers={"HX-Request": "true"})
    assert runs.status_code == 200
    stream = one(html(runs.text), "[sse-connect]").attributes["sse-connect"]
    with client.stream("GET", str(stream)) as events:
        text = "".join(events.iter_text())
    names = re.findall(r"^event: (\S+)", text, re.MULTILINE)
    assert names.count("run-0") > 2  # the answer so far, more than once, then the whole
    assert names[-1] == "done"
    assert "2</strong> distinct" not in text
    assert "1</strong> distinct answer" in text
    assert fake_provider.count() == 2
    assert client.get(str(stream)).status_code == 404  # a job runs once
    saved = client.post(f"/runs/{trace_id}/spans/{span}/playground/save", data={"answer": "streamed variant answer"})
    assert saved.status_code == 303
    fork = dict(get_snapshot(store, saved.headers["location"].removeprefix("/snapshots/")).snapshot)
    model, agent = scripted()
    assert asyncio.run(run_with(agent, snapshot=fork)) == "streamed variant answer"
    assert model.calls == 0  # the replay continued from the variant: no model asked


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        ({"messages": "hi", "model": "openai:gpt-4.1-mini"}, 400, "messages: a non-empty list"),
        ({"messages": [{"role": "wizard", "content": "x"}], "model": "openai:m"}, 400, "messages[0].role"),
        ({"messages": [{"role": "user", "content": "x"}], "model": "gemini:x"}, 400, "unknown model provider 'gemini'"),
        (
            {"messages": [{"role": "user", "content": "x"}], "model": "openai:m", "params": {"base_url": "http://x"}},
            400,
            "params.base_url",
        ),
        ({"messages": [{"role": "user", "content": "x"}], "model": "openai:no-such-model"}, 422, "no-such-model"),
    ],
)
def test_bad_input_is_answered_in_words_and_nothing_is_journaled(
    client: TestClient,
    store: Store,
    tmp_path: Path,
    fake_provider: FakeProvider,
    body: dict[str, Any],
    status: int,
    words: str,
) -> None:
    trace_id, span = recorded(store, tmp_path)
    fake_provider.reply({"error": {"status": 404, "message": "The model no-such-model does not exist"}})
    answer = client.post(f"/runs/{trace_id}/spans/{span}/playground", json=body, headers={"Accept": "application/json"})
    assert answer.status_code == status, answer.text
    assert words in answer.json()["error"]
    assert store.query("SELECT count(DISTINCT trace_id) FROM events") == [(1,)]


def test_a_missing_key_is_said_in_the_page(
    client: TestClient, store: Store, tmp_path: Path, fake_provider: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace_id, span = recorded(store, tmp_path)
    monkeypatch.delenv("OPENAI_API_KEY")
    form = {"messages": json.dumps(edited_messages("hi")), "model": "openai:gpt-4.1-nokey"}
    runs = client.post(f"/runs/{trace_id}/spans/{span}/playground", data=form, headers={"HX-Request": "true"})
    stream = one(html(runs.text), "[sse-connect]").attributes["sse-connect"]
    with client.stream("GET", str(stream)) as events:
        text = "".join(events.iter_text())
    assert "OPENAI_API_KEY" in text or "api_key" in text
    assert fake_provider.count() == 0
    bad = client.post(
        f"/runs/{trace_id}/spans/{span}/playground", data={"messages": "[oops"}, headers={"HX-Request": "true"}
    )
    assert bad.status_code == 200
    assert "messages: not JSON" in one(html(bad.text), ".pg-error").text()


def test_an_sdk_recorded_turn_opens_and_is_asked_again(
    client: TestClient, store: Store, tmp_path: Path, fake_provider: FakeProvider
) -> None:
    devtool.instrument.install()
    sdk = openai.OpenAI(base_url=fake_provider.openai_base_url, api_key=KEY)
    fake_provider.reply({"text": "recorded through the SDK"})

    async def main() -> Any:
        question = [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "Name a river"}]
        return await asyncio.to_thread(lambda: sdk.chat.completions.create(model="gpt-4.1-mini", messages=question))

    trace_id = record(store, tmp_path, main)
    (span,) = store.query("SELECT span_id FROM spans WHERE trace_id = ? AND kind = 'turn'", [trace_id])[0]
    page = html(client.get(f"/runs/{trace_id}/spans/{span}/playground").text)
    assert one(page, "#pg-model").attributes["value"] == "openai:gpt-4.1-mini"
    assert "recorded through the SDK" in one(page, "#pg-recorded").text()
    messages = json.loads(one(page, "#pg-messages").text())
    messages[1]["content"] = "Name a mountain"
    fake_provider.reply({"text": "Etna."})
    body = {"messages": messages, "model": "openai:gpt-4.1-mini"}
    answer = client.post(f"/runs/{trace_id}/spans/{span}/playground", json=body, headers={"Accept": "application/json"})
    assert answer.json()["text"] == "Etna."
    assert fake_provider.count() == 2  # the recording's request, and the playground's one
    assert fake_provider.requests()[1]["body"]["messages"][1]["content"] == "Name a mountain"
