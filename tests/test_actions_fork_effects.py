"""A fork's edits that did not take effect, named on the compare page of its replay: a memory key the
agent overwrites on start, a call the replay never made; and why an "only differences" view is empty."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from starlette.testclient import TestClient

import devtool.instrument
from devtool.actions.fork_effects import empty_reason, fork_effects
from devtool.core import MemorySink, ScriptedModel, create_agent, create_tool, memory, prompt, run_with
from devtool.core.debugger import fork_snapshot, restore_snapshot
from devtool.store import Store, save_snapshot
from devtool.web import create_app
from testkit.fake_provider import FakeProvider
from tests.web_runs import html, one, record

AGENT = "root/agent:worker:0"


def program() -> Any:
    lookup = create_tool("lookup", lambda q: {"q": q})

    async def worker(props: Any) -> Any:
        memory()["mode"] = "careful"  # set on every start: an edit of it is overwritten before it is read
        return await lookup(q=memory()["mode"])

    return lambda: create_agent("worker", worker)({})


@pytest.fixture
def client(store: Store) -> Iterator[TestClient]:
    with TestClient(create_app(store), follow_redirects=False) as client:
        yield client


def replayed_fork(store: Store, tmp_path: Path, **edits: Any) -> tuple[str, str, str]:
    """The program recorded, forked with `edits`, stored, and replayed: (original, fork id, replay)."""
    original = record(store, tmp_path, program(), name="original")
    sink = MemorySink()
    asyncio.run(run_with(program(), sinks=[sink]))
    parent = dict(restore_snapshot(sink.events))
    parent_id = save_snapshot(store, parent)
    fork = dict(fork_snapshot(parent, parent=parent_id, **edits))
    fork_id = save_snapshot(store, fork, parent_id=parent_id)
    metadata = {"replay": {"snapshotId": fork_id, "originalTraceId": original}}
    replay = record(store, tmp_path, program(), name="replay", snapshot=fork, metadata=metadata)
    return original, fork_id, replay


def test_an_overwritten_memory_edit_is_named_where_it_was_overwritten(
    client: TestClient, store: Store, tmp_path: Path
) -> None:
    _, fork_id, replay = replayed_fork(store, tmp_path, memory={AGENT: {"mode": "reckless"}})
    effects = fork_effects(store, fork_id, replay)
    assert effects is not None
    assert effects.edits == 1
    (lost,) = effects.lost
    assert (lost.kind, lost.call_id) == ("memory", AGENT)
    assert "'mode' was overwritten" in lost.words
    assert "'careful'" in lost.words
    assert lost.span_id is not None
    page = html(client.get(f"/runs/{replay}/compare", follow_redirects=True).text)
    named = one(page, "#fork-effects").text()
    assert "did not take effect" in named
    assert "'mode' was overwritten" in named
    assert one(page, f'#fork-effects a[href*="span={lost.span_id}"]')
    assert "no edit of the fork took effect" in one(page, "#fork-empty").text()


def test_an_edited_call_the_replay_never_made_is_named(client: TestClient, store: Store, tmp_path: Path) -> None:
    never = f"{AGENT}/tool:lookup:7"
    _, fork_id, replay = replayed_fork(store, tmp_path, outputs={never: {"q": "x"}})
    effects = fork_effects(store, fork_id, replay)
    assert effects is not None
    (lost,) = effects.lost
    assert lost.call_id == never
    assert f"the last {AGENT}/tool:lookup:0" in lost.words
    page = html(client.get(f"/runs/{replay}/compare", follow_redirects=True).text)
    assert "never reached" in one(page, f'#fork-effects li[data-call-id="{never}"]').text()


def test_an_edit_that_took_effect_is_not_named(client: TestClient, store: Store, tmp_path: Path) -> None:
    _, fork_id, replay = replayed_fork(store, tmp_path, outputs={f"{AGENT}/tool:lookup:0": {"q": "edited"}})
    effects = fork_effects(store, fork_id, replay)
    assert effects is not None
    assert effects.lost == []
    page = html(client.get(f"/runs/{replay}/compare", follow_redirects=True).text)
    assert not page.css("#fork-effects")


def test_why_nothing_differs_in_words() -> None:
    assert "the replay served every call from the snapshot" in empty_reason(None, 0)
    assert "the 2 calls the replay ran live returned what" in empty_reason(None, 2)


def test_edited_messages_sent_by_a_prompt_turn_and_an_sdk_turn_are_not_named(
    store: Store, tmp_path: Path, fake_provider: FakeProvider
) -> None:
    devtool.instrument.install()
    client = openai.OpenAI(base_url=fake_provider.openai_base_url, api_key="sk-fork-effects-0123456789")
    fake_provider.reply({"text": "hello"}, times=None)
    model = ScriptedModel(lambda messages: "scripted")

    async def both(props: Any) -> Any:
        await prompt([{"role": "user", "content": "hi"}], model=model)
        return await asyncio.to_thread(
            lambda: client.chat.completions.create(model="gpt-4.1-mini", messages=[{"role": "user", "content": "hi"}])
        )

    program = lambda: create_agent("worker", both)({})  # noqa: E731
    original = record(store, tmp_path, program, name="original")
    sink = MemorySink()
    asyncio.run(run_with(program, sinks=[sink]))
    turns = [e["callId"] for e in sink.events if e["type"] == "turn:end"]
    assert len(turns) == 2
    edited = [{"role": "user", "content": "hi there"}]
    parent = dict(restore_snapshot(sink.events))
    fork = dict(fork_snapshot(parent, messages={turn: edited for turn in turns}))
    fork_id = save_snapshot(store, fork, parent_id=save_snapshot(store, parent))
    metadata = {"replay": {"snapshotId": fork_id, "originalTraceId": original}}
    replay = record(store, tmp_path, program, name="replay", snapshot=fork, metadata=metadata)
    effects = fork_effects(store, fork_id, replay)
    assert effects is not None
    assert effects.lost == []  # both turns sent the edit: the SDK's request carried it
    assert fake_provider.requests()[-1]["body"]["messages"] == edited
