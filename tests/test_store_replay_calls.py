"""A replay's live calls told apart by why they ran: input changed, after the cut, or not recorded at all;
and the run and compare pages saying so ("ran live: not recorded"), never showing such a call cached.

The agent is real code on the real `openai` SDK against the fake provider: a model request, then three
`@devtool.tool`s with side effects the test counts: `lookup` (its input is the props' question),
`open_file` (its output is not JSON, so the recording holds no answer for it: a tombstone) and
`send_email`. It is recorded, rewound to before `send_email`, and replayed with another question."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import openai
import pytest
from selectolax.lexbor import LexborHTMLParser as HTMLParser
from starlette.testclient import TestClient

import devtool
import devtool.instrument
from devtool.actions.run_rewind import rewind
from devtool.core import JsonlSink, create_agent, run_with
from devtool.store import Store, get_snapshot, load_file
from devtool.store.queries.replay_calls import ReplayCalls, _classified, replay_calls
from devtool.web import create_app
from devtool.web.settings import Settings
from testkit.fake_provider import FakeProvider
from tests.web_runs import html, one, span_of

devtool.instrument.openai()
SIDE_EFFECTS: list[str] = []


class FileHandle:
    """Not JSON: a tool returning it is journaled as a tombstone, never replayed."""


@devtool.tool
def lookup(q: str) -> dict[str, str]:
    SIDE_EFFECTS.append(f"lookup {q}")
    return {"found": q}


@devtool.tool
def open_file(path: str) -> FileHandle:
    SIDE_EFFECTS.append(f"open {path}")
    return FileHandle()


@devtool.tool
def send_email(to: str) -> str:
    SIDE_EFFECTS.append(f"email {to}")
    return f"sent to {to}"


def agent(fake: FakeProvider, question: str, model: str = "gpt-4.1-mini") -> Any:
    async def main() -> str:
        client = openai.OpenAI(base_url=fake.openai_base_url, api_key="sk-replay-calls-0123456789")
        answer = client.chat.completions.create(model=model, messages=[{"role": "user", "content": "plan"}])
        lookup(q=question)
        open_file(path="/tmp/notes.txt")
        return send_email(to="ops@example.com") + " / " + str(answer.choices[0].message.content)

    return main


def recorded(store: Store, path: Path, fn: Any, **kwargs: Any) -> str:
    with JsonlSink(path) as sink:
        asyncio.run(run_with(fn, sinks=[sink], **kwargs))
    return load_file(store, path).traces[0]


@pytest.fixture
def replayed(store: Store, tmp_path: Path, fake_provider: FakeProvider) -> tuple[str, str]:
    """(the original's trace id, its replay's): rewound to before `send_email`, the question changed."""
    fake_provider.reply({"text": "the plan"}, times=None)
    SIDE_EFFECTS.clear()
    original = recorded(store, tmp_path / "original.jsonl", agent(fake_provider, "rust"))
    cut = rewind(store, original, span_of(store, original, "send_email", "tools:execute"), "before")
    snapshot = get_snapshot(store, cut).snapshot
    metadata = {"replay": {"id": "r1", "snapshotId": cut, "originalTraceId": original}}
    SIDE_EFFECTS.clear()
    replay = recorded(
        store, tmp_path / "replay.jsonl", agent(fake_provider, "go"), snapshot=snapshot, metadata=metadata
    )
    return original, replay


def ran_live(page: HTMLParser) -> list[str]:
    """What the lines that open a page's lists of calls that ran live say (not recorded is an alert)."""
    return [re.sub(r"\s+", " ", summary.text()).strip() for summary in page.css("#live-calls summary")]


def said_once(page: HTMLParser, *reasons: str) -> None:
    """Each reason some call ran live for is said once on the page: no count repeats the line of its calls."""
    text = re.sub(r"\s+", " ", page.text())
    assert [text.count(reason) for reason in reasons] == [1] * len(reasons), text


def test_each_live_call_says_why_it_ran(store: Store, replayed: tuple[str, str], fake_provider: FakeProvider) -> None:
    original, replay = replayed
    assert fake_provider.count() == 1  # the model request was served from the snapshot
    assert SIDE_EFFECTS == ["lookup go", "open /tmp/notes.txt", "email ops@example.com"]
    calls = replay_calls(store, replay)
    assert isinstance(calls, ReplayCalls)
    assert (calls.original, calls.cached) == (original, 1)
    assert [(c.name, c.reason) for c in calls.live] == [
        ("lookup", "changed"),
        ("open_file", "unrecorded"),
        ("send_email", "cut"),
    ]
    assert [c.call_id for c in calls.because("unrecorded")] == ["root/tool:open_file:0"]
    assert replay_calls(store, original) is None  # not a replay
    # The same replay compared with a run that never made these calls: nothing of it was recorded there.
    other = recorded(store, Path(store.path).parent / "other.jsonl", lambda: None)
    against_other = replay_calls(store, replay, other)
    assert against_other is not None
    assert [c.reason for c in against_other.live] == ["unrecorded"] * 3


def test_a_request_to_another_model_ran_live_because_its_input_changed(
    store: Store, tmp_path: Path, fake_provider: FakeProvider
) -> None:
    fake_provider.reply({"text": "the plan"}, times=None)
    original = recorded(store, tmp_path / "original.jsonl", agent(fake_provider, "rust"))
    whole = rewind(store, original, span_of(store, original, "send_email", "tools:execute"), "after")
    metadata = {"replay": {"id": "r2", "snapshotId": whole, "originalTraceId": original}}
    snapshot = get_snapshot(store, whole).snapshot
    replay = recorded(
        store,
        tmp_path / "replay.jsonl",
        agent(fake_provider, "rust", model="gpt-4.1"),
        snapshot=snapshot,
        metadata=metadata,
    )
    assert fake_provider.count() == 2
    calls = replay_calls(store, replay)
    assert calls is not None
    assert calls.cached == 2  # lookup and send_email
    assert [(c.call_id, c.reason) for c in calls.live] == [
        ("root/turn:gpt-4.1:0", "changed"),
        ("root/tool:open_file:0", "unrecorded"),
    ]
    # The pages count only the reasons some call ran live for: none ran after the cut here.
    with TestClient(create_app(store, Settings())) as client:
        for url in (f"/runs/{replay}/actions", f"/compare?a={original}&b={replay}"):
            page = html(client.get(url).text)
            said_once(page, "because its input changed", "not recorded")
            assert ran_live(page) == ["1 call ran live because its input changed"], url
            assert not page.css("#live-cut-count, #live-cut")


def test_the_run_and_compare_pages_say_ran_live_not_recorded(store: Store, replayed: tuple[str, str]) -> None:
    original, replay = replayed
    unrecorded = span_of(store, replay, "open_file", "tools:execute") + "%230"  # the batch's tool result #0
    with TestClient(create_app(store, Settings()), follow_redirects=False) as client:
        for url in (f"/runs/{replay}/actions", f"/runs/{replay}/compare"):
            page = html(client.get(url, follow_redirects=True).text)
            notice = one(page, "#live-unrecorded")
            assert "ran live: not recorded" in notice.text()
            (link,) = notice.css("a.live-call-name")
            assert link.text() == "open_file"
            assert link.attributes["href"] == f"/runs/{replay}?span={unrecorded}"
            assert one(page, "#live-changed-count").text() == "1"
            assert one(page, "#live-cut-count").text() == "1"
            assert "lookup" in one(page, "#live-changed").text()
            assert "send_email" in one(page, "#live-cut").text()
        assert not html(client.get(f"/runs/{original}/actions").text).css("#live-calls")
        # The run's tree and the tool's detail mark it; nothing else is marked so.
        tool = span_of(store, replay, "open_file", "tools:execute") + "#0"
        page = html(client.get(f"/runs/{replay}", params={"span": tool}).text)
        (marked,) = page.css("#tree .badge.unrecorded")
        assert "open_file" in marked.parent.text()  # type: ignore[union-attr]
        assert marked.text() == "not recorded"
        assert "ran live: not recorded" in one(page, "#detail-unrecorded").text()
        assert not page.css("#detail .badge.cached")
        # The tool that ran live is not marked cached on its detail; the model request served is.
        for text, kind, cached in (("open_file", "tools:execute", False), ("gpt-4.1-mini", "turn", True)):
            span = span_of(store, replay, text, kind)
            detail = html(client.get(f"/runs/{replay}?span={span}").text)
            assert bool(detail.css("#detail .badge.cached")) is cached, text


# A count of calls a snapshot served, however a page words it.
SERVED = re.compile(r"\d+ calls? served from|served \d+ calls? from")


def test_how_many_calls_the_snapshot_served_is_said_once_a_page(store: Store, replayed: tuple[str, str]) -> None:
    original, replay = replayed
    with TestClient(create_app(store, Settings()), follow_redirects=False) as client:
        # The run page is its header and the actions it loads; the compare page is one.
        run_page = client.get(f"/runs/{replay}").text + client.get(f"/runs/{replay}/actions").text
        compare = client.get(f"/compare?a={original}&b={replay}").text
        for page in (run_page, compare):
            text = re.sub(r"\s+", " ", html(page).text())
            assert SERVED.findall(text) == ["1 call served from"], SERVED.findall(text)
        said = one(html(compare), "#compare-served").text()
        assert re.sub(r"\s+", " ", said).startswith("B: 1 call served from the snapshot (")
        assert one(html(run_page), "#run-header #replay-saving").text().startswith("1 call served from the snapshot")
        said_once(html(compare), "because its input changed", "after the cut", "not recorded")
        assert ran_live(html(compare)) == ["1 call ran live because its input changed", "1 call ran live after the cut"]


def test_a_run_not_printed_is_told_apart_from_its_events_the_same(store: Store, replayed: tuple[str, str]) -> None:
    """The stored fingerprints (which calls ran live, in which frames) and the events read whole (a run of
    an older store, not printed) answer alike, whichever of the two runs is not printed."""
    original, replay = replayed
    from_prints = replay_calls(store, replay)
    assert from_prints is not None
    assert [c.reason for c in from_prints.live] == ["changed", "unrecorded", "cut"]
    for unprinted in ([original], [replay], [original, replay]):
        with store.transaction() as conn:
            conn.execute("DELETE FROM printed_runs WHERE trace_id IN (SELECT unnest(?))", [unprinted])
        # Only a run with more events is read again: the same runs at the same versions, unprinted.
        _classified.cache_clear()
        assert replay_calls(store, replay) == from_prints, unprinted
        with store.transaction() as conn:
            conn.execute("INSERT INTO printed_runs SELECT unnest(?)", [unprinted])


def two_agents() -> Any:
    """A run of two agents, each calling `lookup` once."""

    async def step(props: Any) -> Any:
        return lookup(q=props["q"])

    async def main() -> Any:
        await create_agent("first", step)({"q": "a"})
        return await create_agent("second", step)({"q": "b"})

    return main


def test_the_compare_tree_shows_only_the_counts_that_are_not_zero(store: Store, tmp_path: Path) -> None:
    """Rewound before its second agent, the replay's first agent was served from the journal and its second
    ran live: each says the one count that is not zero ("1 cached", not "1 cached 0 live"); the run's own
    frame, where it made no calls, says nothing."""
    original = recorded(store, tmp_path / "original.jsonl", two_agents())
    cut = rewind(store, original, span_of(store, original, "second", "agent"), "before")
    metadata = {"replay": {"id": "r3", "snapshotId": cut, "originalTraceId": original}}
    snapshot = get_snapshot(store, cut).snapshot
    replay = recorded(store, tmp_path / "replay.jsonl", two_agents(), snapshot=snapshot, metadata=metadata)
    with TestClient(create_app(store, Settings())) as client:
        page = html(client.get(f"/compare?a={original}&b={replay}").text)
    shown = {
        call_id: [badge.text() for badge in page.css(f'li[data-call-id="{call_id}"] > .served .badge')]
        for call_id in ("root", "root/agent:first:0", "root/agent:second:0")
    }
    assert shown == {"root": [], "root/agent:first:0": ["1 cached"], "root/agent:second:0": ["1 live"]}
