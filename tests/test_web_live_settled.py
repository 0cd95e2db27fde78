"""Read your writes, except a running run's view: it shows the run as derived so far, without waiting.

Events here are appended with their derive left pending (`derive=False`, as the live appender does),
and derived when the test says, so each case sees the moment it is about: a page drawn while a
derive is pending, that derive committing before the page's stream subscribes, and the stream then
bringing what the page did not show.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx2
import orjson
import pytest
from starlette.testclient import TestClient

from devtool.store import Store, append_events
from devtool.web import create_app
from devtool.web.live import Broker
from devtool.web.live.settled import live_view_of
from devtool.web.live.streams import RunFeed, messages
from devtool.web.settings import Settings
from testkit.sse import parse
from tests.conftest import Trace, running_run
from tests.otlp_factory import log_record, logs_request, request, span
from tests.web_runs import html, one


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def client(store: Store) -> Iterator[TestClient]:
    # Derives follow appends at most once a minute: none runs behind the test's back.
    with TestClient(create_app(store, Settings(live_interval=60))) as client:
        yield client


def waited(response: httpx2.Response) -> bool:
    return bool(re.search(r"settle;dur=", response.headers["server-timing"]))


def test_a_running_runs_page_shows_what_is_derived_without_waiting_and_listens_from_there(
    client: TestClient, store: Store
) -> None:
    t, root = running_run(2)
    append_events(store, t.events)
    derived_through = len(t.events)
    late = t.start("turn", root, name="the late turn")
    t.end(late)
    append_events(store, t.events[derived_through:], derive=False)
    response = client.get(f"/runs/{t.trace_id}")
    assert response.status_code == 200
    assert not waited(response)
    assert store.backlog.holds(t.trace_id)  # nothing derived it: the page did not wait for a derive
    page = html(response.text)
    assert "the late turn" not in response.text
    listener = one(page, "[sse-connect]")
    n = derived_through
    assert listener.attributes["sse-connect"] == f"/runs/{t.trace_id}/live?after={n}&spans={n}"
    for pane in ("header", "tree", "timeline", f"tree/{root}/children", f"spans/{root}/usage"):
        answer = client.get(f"/runs/{t.trace_id}/{pane}")
        assert answer.status_code == 200, pane
        assert not waited(answer), pane
    assert store.backlog.holds(t.trace_id)


@pytest.mark.anyio
async def test_a_derive_between_the_page_and_its_stream_is_told_by_the_stream(store: Store) -> None:
    """The run's last events were pending when its page was drawn; their derive commits before the
    page's stream subscribes (no `spans` message reaches the page from it): the stream replays the
    events, then says the spans cover them."""
    t, root = running_run(1)
    append_events(store, t.events)
    drawn = len(t.events)
    t.end(t.start("turn", root))
    append_events(store, t.events[drawn:], derive=False)
    app = create_app(store, Settings(live_interval=60))
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://devtool") as client:
        page = await client.get(f"/runs/{t.trace_id}")
    assert not waited(page)
    assert f"live?after={drawn}&amp;spans={drawn}" in page.text
    store.derive_backlog()
    with Broker().subscription(t.trace_id) as subscription:
        stream = messages(RunFeed(store, t.trace_id, 0.0, drawn=drawn), subscription, drawn)
        await anext(stream)  # the opening comment
        sent = [next(parse((await anext(stream)).encode().decode().splitlines())) for _ in range(2)]
    assert [m.event for m in sent] == ["events", "spans"]
    assert [e["id"] for e in sent[0].json()["events"]] == list(range(drawn + 1, len(t.events) + 1))
    assert sent[1].json() == {"through": len(t.events)}


@pytest.mark.anyio
async def test_a_stream_without_spans_or_with_the_spans_shown_sends_no_spans_message(store: Store) -> None:
    t, root = running_run(1)
    t.end(root)
    append_events(store, t.events)
    app = create_app(store)
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://devtool") as client:
        plain = await client.get(f"/runs/{t.trace_id}/live?after=1")
        shown = await client.get(f"/runs/{t.trace_id}/live?after=1&spans={len(t.events)}")
        bad = await client.get(f"/runs/{t.trace_id}/live?after=1&spans=-3")
    for response in (plain, shown):
        assert [m.event for m in parse(response.text.splitlines()) if m.event] == ["events", "close"]
    assert bad.status_code == 400
    assert "spans must be an event id" in bad.json()["error"]


def test_a_finished_runs_page_waits_for_its_last_events(client: TestClient, store: Store) -> None:
    """An OpenTelemetry run whose root came, then a late child span: the page shows it (it does not listen)."""
    t = Trace()
    root = t.start("agent", agentId="done")
    t.end(root)
    append_events(store, t.events)
    t.end(t.start("turn", root, name="the late child"))
    append_events(store, t.events[2:], derive=False)
    response = client.get(f"/runs/{t.trace_id}")
    assert waited(response)
    assert "the late child" in response.text
    assert not store.backlog.holds(t.trace_id)


def test_a_run_whose_pending_events_end_its_root_waits_to_be_shown_whole(client: TestClient, store: Store) -> None:
    """An exporter sends its root span's end, then opens the run: it sees it whole, not as running."""
    t, root = running_run(1)
    append_events(store, t.events)
    t.end(t.start("turn", root, name="the last turn"))
    t.end(root)
    append_events(store, t.events[-3:], derive=False)
    response = client.get(f"/runs/{t.trace_id}")
    assert waited(response)
    assert "the last turn" in response.text
    assert html(response.text).css("[sse-connect]") == []  # finished: it does not listen


def test_a_run_with_nothing_pending_does_not_wait_for_another_runs_derive(client: TestClient, store: Store) -> None:
    quiet, _ = running_run(1)
    busy, busy_root = running_run(1)
    append_events(store, quiet.events + busy.events)
    busy.end(busy.start("turn", busy_root))
    append_events(store, busy.events[-2:], derive=False)
    response = client.get(f"/runs/{quiet.trace_id}")
    assert response.status_code == 200
    assert not waited(response)
    assert store.backlog.holds(busy.trace_id)
    # The runs list, and the actions on a live run, still wait for all there is.
    assert waited(client.get("/"))
    busy.end(busy.start("turn", busy_root))
    append_events(store, busy.events[-2:], derive=False)
    assert waited(client.get(f"/runs/{busy.trace_id}/actions"))


def test_a_runs_view_does_not_wait_for_its_words_and_a_search_does(client: TestClient, store: Store) -> None:
    """A page's derive of a run leaves its words and call fingerprints to the index step after it:
    the run's header does not wait for that step; a find in the run and the runs search do."""
    t = Trace()
    root = t.start("agent", agentId="clerk")
    t.point("sys:log", root, message="reconciling the zanzibar ledger")
    t.end(root)
    append_events(store, t.events, derive=False)
    store.derive_backlog(t.trace_id)  # as a page of the run derives it
    assert store.unindexed.holds(t.trace_id)
    header = client.get(f"/runs/{t.trace_id}/header")
    assert header.status_code == 200
    assert not waited(header)
    assert store.unindexed.holds(t.trace_id)  # not indexed by it
    found = client.get(f"/runs/{t.trace_id}/search", params={"q": "zanzibar"})
    assert waited(found)
    assert not store.unindexed
    assert "zanzibar" in found.text
    listed = client.get("/", params={"q": "zanzibar"})
    assert t.trace_id in listed.text


def test_ingest_does_not_wait_for_the_derive_of_what_came_before(client: TestClient, store: Store) -> None:
    """Each exporter's batch answered once stored: waiting for the derive of the batches before it
    would have every batch wait for a derive, one at a time."""
    t, root = running_run(1)
    append_events(store, t.events)
    t.end(t.start("turn", root))
    append_events(store, t.events[-2:], derive=False)
    spans = request(span("chat", {"gen_ai.operation.name": "chat"}, trace="1" * 32))
    logs = logs_request(log_record("gen_ai.user.message", {"content": "hi"}, trace="2" * 32, sid="3" * 16))
    answers = {
        "/v1/traces": client.post(
            "/v1/traces", content=orjson.dumps(spans), headers={"content-type": "application/json"}
        ),
        "/v1/logs": client.post("/v1/logs", content=orjson.dumps(logs), headers={"content-type": "application/json"}),
        "/api/v1/traces": client.post("/api/v1/traces", json=t.events[-1:]),
    }
    for path, answer in answers.items():
        assert answer.status_code == 200, (path, answer.text)
        assert not waited(answer), path


@pytest.mark.parametrize(
    ("method", "path", "trace_id"),
    [
        ("GET", "/runs/abc", "abc"),
        ("GET", "/runs/abc/timeline", "abc"),
        ("GET", "/runs/abc/select", "abc"),
        ("GET", "/runs/abc/header", "abc"),
        ("GET", "/runs/abc/tree", "abc"),
        ("GET", "/runs/abc/tree/s1/children", "abc"),
        ("GET", "/runs/abc/spans/s1/usage", "abc"),
        ("GET", "/runs/abc/spans/s1/answer", "abc"),
        ("GET", "/runs/abc/search", "abc"),
        ("GET", "/runs/a%2Fb/header", "a/b"),
        ("POST", "/runs/abc/rewind", None),
        ("GET", "/runs/abc/actions", None),
        ("GET", "/runs/abc/compare", None),
        ("GET", "/runs/abc/export.jsonl.gz", None),
        ("GET", "/runs/abc/spans/s1", None),
        ("GET", "/runs/abc/tree//children", None),
        ("GET", "/runs/", None),
        ("GET", "/snapshots/abc", None),
    ],
)
def test_which_requests_may_show_a_run_as_derived_so_far(method: str, path: str, trace_id: str | None) -> None:
    assert live_view_of(method, path) == trace_id
