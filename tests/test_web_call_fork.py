"""The fork editor through HTTP: from a span on a run page (a tool's output, a turn's answer or messages)
and from a snapshot page (a journal entry's output), a fork whose replay returns the edit; bad edits
answered in words; the page token required."""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from starlette.testclient import TestClient

import devtool.instrument
from devtool.core import ScriptedModel, create_agent, create_tool, prompt, run_with
from devtool.store import Store, get_snapshot
from devtool.web import create_app
from devtool.web.state import AppState
from testkit.fake_provider import FakeProvider
from tests.web_runs import html, one, record, rewind, span_of

SEARCH = "root/agent:researcher:0/tool:search:0"
TURN_1 = "root/agent:researcher:0/turn:scripted-model:1"
BASE = "http://127.0.0.1:8484"
SAME_ORIGIN = {"Origin": BASE, "Sec-Fetch-Site": "same-origin"}


class World:
    """A researcher that searches and answers; counts model requests and searches."""

    def __init__(self) -> None:
        self.searches: Counter[str] = Counter()
        self.asked = 0

        def search(query: str) -> list[str]:
            self.searches[query] += 1
            return [f"{query} result"]

        def answer(messages: list[Any]) -> Any:
            self.asked += 1
            if messages[-1]["role"] == "tool":
                return f"found {messages[-1]['content']}"
            return {"tool_calls": [{"name": "search", "arguments": {"query": "cats"}}]}

        model = ScriptedModel(answer)
        tool = create_tool("search", search)
        system = {"role": "system", "content": "You research."}
        self.researcher = create_agent(
            "researcher", lambda props: prompt([system, {"role": "user", "content": "cats"}], tools=[tool], model=model)
        )

    async def main(self) -> Any:
        return await self.researcher()


@pytest.fixture
def client(store: Store) -> Iterator[TestClient]:
    with TestClient(create_app(store), base_url=BASE, follow_redirects=False) as client:
        yield client


def token(client: TestClient) -> str:
    return AppState.of(client.app).access.csrf  # type: ignore[arg-type]


def replay(snapshot: dict[str, Any]) -> tuple[World, Any]:
    world = World()
    return world, asyncio.run(run_with(world.main, snapshot=snapshot))


def fork_of(client: TestClient, store: Store, response: Any) -> dict[str, Any]:
    assert response.status_code == 303, response.text
    fork_id = response.headers["location"].removeprefix("/snapshots/")
    page = html(client.get(f"/snapshots/{fork_id}").text)
    assert one(page, "#replay-button")  # the fork's page offers Replay
    return dict(get_snapshot(store, fork_id).snapshot)


def test_a_tool_output_edited_on_the_run_page_replays_without_the_tool(
    client: TestClient, store: Store, tmp_path: Path
) -> None:
    trace_id = record(store, tmp_path, World().main)
    batch = span_of(store, trace_id, "search", "tools:execute")
    whole = html(client.get(f"/runs/{trace_id}?span={batch}").text)  # a batch of one call edits that call
    assert one(whole, "#fork-output-form input[name=call_id]").attributes["value"] == SEARCH
    page = html(client.get(f"/runs/{trace_id}?span={batch}%230").text)
    editor = one(page, "#fork-output-form")
    assert one(editor, "input[name=call_id]").attributes["value"] == SEARCH
    assert '"cats result"' in one(editor, "textarea").text()
    form = {"call_id": SEARCH, "format": "json", "output": '["dogs"]', "_csrf": token(client)}
    fork = fork_of(client, store, client.post(f"/runs/{trace_id}/fork", data=form, headers=SAME_ORIGIN))
    assert fork["metadata"]["fork"]["calls"] == {SEARCH: {"output": ["dogs"]}}
    world, result = replay(fork)
    assert world.searches == Counter()
    assert world.asked == 1  # the turn that read the tool's output, and no other
    assert result == 'found ["dogs"]'


def test_an_answer_and_messages_edited_on_the_run_page(client: TestClient, store: Store, tmp_path: Path) -> None:
    trace_id = record(store, tmp_path, World().main)
    turns = span_of_all(store, trace_id, "turn")
    page = html(client.get(f"/runs/{trace_id}?span={turns[-1]}").text)
    assert one(page, "#fork-output-form input[name=format]").attributes["value"] == "text"
    assert "You research." in one(page, "#fork-messages").text()
    answer = {"call_id": TURN_1, "format": "text", "output": "nothing at all", "_csrf": token(client)}
    world, result = replay(
        fork_of(client, store, client.post(f"/runs/{trace_id}/fork", data=answer, headers=SAME_ORIGIN))
    )
    assert (world.asked, result) == (0, "nothing at all")
    edited = '[{"role": "system", "content": "You research less."}, {"role": "user", "content": "cats"}]'
    messages = {"call_id": TURN_1.replace(":1", ":0"), "messages": edited, "_csrf": token(client)}
    world, _ = replay(fork_of(client, store, client.post(f"/runs/{trace_id}/fork", data=messages, headers=SAME_ORIGIN)))
    assert world.asked == 2  # both turns send the edited system message; the search input is the same
    assert world.searches == Counter()


def span_of_all(store: Store, trace_id: str, kind: str) -> list[str]:
    rows = store.query("SELECT span_id FROM spans WHERE trace_id = ? AND kind = ? ORDER BY start_ts", [trace_id, kind])
    return [row[0] for row in rows]


def test_a_journal_entry_edited_on_the_snapshot_page(client: TestClient, store: Store, tmp_path: Path) -> None:
    trace_id = record(store, tmp_path, World().main)
    agent = span_of(store, trace_id, "researcher", "agent")
    parent = rewind(client, trace_id, agent, "after")
    page = html(client.get(f"/snapshots/{parent}").text)
    (field,) = [f for f in page.css("textarea[name^='output.']") if ":tool:" in str(f.attributes["name"])]
    form = {str(i.attributes["name"]): str(i.attributes["value"]) for i in page.css("#fork-form input[type=hidden]")}
    form[str(field.attributes["name"])] = '["edited in the snapshot"]'
    response = client.post(f"/snapshots/{parent}/fork", data=form)
    fork = fork_of(client, store, response)
    (entry,) = fork["metadata"]["fork"]["entries"]
    assert entry["callId"] == "root/agent:researcher:0"
    assert entry["kind"] == "tool"
    world, result = replay(fork)
    assert world.searches == Counter()
    assert result == 'found ["edited in the snapshot"]'


@pytest.mark.parametrize(
    ("form", "words"),
    [
        ({"call_id": SEARCH, "format": "json", "output": "[oops"}, "output of " + SEARCH + ": line 1, column 2"),
        ({"call_id": "root/agent:researcher:0", "output": "1"}, "is no turn or tool call"),
        ({"call_id": TURN_1, "messages": '"hi"'}, "non-empty list"),
        ({"call_id": SEARCH}, "give the new output or messages"),
        ({"output": "1"}, "fork needs call_id"),
    ],
)
def test_a_bad_edit_is_answered_in_words(
    client: TestClient, store: Store, tmp_path: Path, form: dict[str, str], words: str
) -> None:
    trace_id = record(store, tmp_path, World().main)
    response = client.post(f"/runs/{trace_id}/fork", data={**form, "_csrf": token(client)}, headers=SAME_ORIGIN)
    assert 400 <= response.status_code < 500
    assert words in re.sub(r"\s+", " ", response.text.replace("&#34;", '"').replace("&#39;", "'"))


def test_a_fork_without_the_page_token_is_refused(client: TestClient, store: Store, tmp_path: Path) -> None:
    trace_id = record(store, tmp_path, World().main)
    form = {"call_id": SEARCH, "format": "json", "output": "[]"}
    assert client.post(f"/runs/{trace_id}/fork", data=form, headers=SAME_ORIGIN).status_code == 403
    cross = {"Origin": "http://evil.example", "X-DevTool-CSRF": token(client)}
    assert client.post(f"/runs/{trace_id}/fork", data=form, headers=cross).status_code == 403
    assert store.query("SELECT count(*) FROM rewind.snapshots") == [(0,)]


def test_an_sdk_turn_s_messages_edited_on_the_run_page_are_what_its_replay_sends(
    client: TestClient, store: Store, tmp_path: Path, fake_provider: FakeProvider
) -> None:
    devtool.instrument.install()
    sdk = openai.OpenAI(base_url=fake_provider.openai_base_url, api_key="sk-web-call-fork-0123456789")
    fake_provider.reply({"text": "arr"}, times=None, contains="PIRATE")
    fake_provider.reply({"text": "plain"}, times=None)

    def ask(user: str) -> str:
        system = {"role": "system", "content": "You research."}
        messages: Any = [system, {"role": "user", "content": user}]
        return sdk.chat.completions.create(model="gpt-4.1-mini", messages=messages).choices[0].message.content or ""

    async def main() -> list[str]:
        return [await asyncio.to_thread(ask, "cats"), await asyncio.to_thread(ask, "dogs")]

    trace_id = record(store, tmp_path, main)
    turns = span_of_all(store, trace_id, "turn")
    page = html(client.get(f"/runs/{trace_id}?span={turns[1]}").text)
    call_id = str(one(page, "#fork-messages-form input[name=call_id]").attributes["value"])
    shown = json.loads(one(page, "#fork-messages").text())
    assert shown == [{"role": "system", "content": "You research."}, {"role": "user", "content": "dogs"}]
    shown[0]["content"] = "You are a PIRATE."
    form = {"call_id": call_id, "messages": json.dumps(shown), "_csrf": token(client)}
    fork = fork_of(client, store, client.post(f"/runs/{trace_id}/fork", data=form, headers=SAME_ORIGIN))
    assert fake_provider.count() == 2
    assert asyncio.run(run_with(main, snapshot=fork)) == ["plain", "arr"]
    requests = fake_provider.requests()
    assert len(requests) == 3  # the edited turn alone: the first is served
    assert requests[-1]["body"]["messages"][0] == {"role": "system", "content": "You are a PIRATE."}
