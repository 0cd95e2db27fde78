"""The run page through httpx: timeline, frame tree, detail, fragments and the URL state."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from starlette.testclient import TestClient

from devtool.core import create_agent, create_tool
from devtool.demo import failing, research
from devtool.store import Store, append_events
from devtool.store.queries.navigation import search_spans
from devtool.web import create_app
from devtool.web.links import run_url
from devtool.web.pages.run_workspace import MAX_BARS
from testkit.fuzz import HANG_SECONDS, run_pages
from tests.conftest import Trace
from tests.web_runs import html, one, record, store_unchecked


@pytest.fixture
def client(store: Store) -> Iterator[TestClient]:
    with TestClient(create_app(store)) as client:
        yield client


@pytest.fixture
def research_run(store: Store, tmp_path: Path) -> str:
    return record(store, tmp_path, lambda: research.main({"delay": 0.005}), name="research")


def span_of(store: Store, trace_id: str, text: str, kind: str | None = None) -> str:
    hits = [hit for hit in search_spans(store, trace_id, text) if kind is None or hit.kind == kind]
    assert hits, f"no {kind or 'span'} matching {text!r}"
    return hits[0].span_id


def test_full_page_has_the_three_panes(client: TestClient, research_run: str) -> None:
    response = client.get(f"/runs/{research_run}")
    assert response.status_code == 200
    assert response.headers["vary"] == "HX-Request"
    page = html(response.text)
    assert one(page, "h1").text() == "research-lead"
    assert one(page, "#workspace").attributes["data-trace"] == research_run
    bars = page.css("#bars rect.bar")
    assert 10 < len(bars) <= MAX_BARS
    assert {bar.attributes["class"].split()[1] for bar in bars} >= {"k-agent", "k-generation", "k-turn"}
    names = [node.text() for node in page.css("#tree .row .name")]
    assert names[:3] == ["runWith", "research-lead", "generation 0"]
    assert names.count("researcher") == 3
    assert "Select a span" in one(page, "#detail").text()


def test_an_htmx_selection_gets_the_workspace_and_pushes_the_url(
    client: TestClient, store: Store, research_run: str
) -> None:
    turn = span_of(store, research_run, "turn 1", "turn")
    response = client.get(f"/runs/{research_run}?span={turn}", headers={"HX-Request": "true"})
    assert "<html" not in response.text
    assert response.headers["HX-Push-Url"] == f"/runs/{research_run}?span={turn}"
    page = html(response.text)
    assert one(page, "#workspace").attributes["data-span"] == turn
    # The selected span is found in the tree (opened down to it) and on the timeline.
    assert one(page, "#tree .row.selected a.select").attributes["data-span"] == turn
    assert one(page, "#bars rect.selected").attributes["data-span"] == turn
    restore = client.get(
        f"/runs/{research_run}?span={turn}", headers={"HX-Request": "true", "HX-History-Restore-Request": "true"}
    )
    assert "<html" in restore.text


def test_selecting_swaps_tree_and_detail_and_keeps_the_timeline(
    client: TestClient, store: Store, research_run: str
) -> None:
    turn = span_of(store, research_run, "turn 1", "turn")
    response = client.get(f"/runs/{research_run}/select?span={turn}&start=1&end=2", headers={"HX-Request": "true"})
    assert response.headers["HX-Push-Url"] == f"/runs/{research_run}?span={turn}&start=1&end=2"
    page = html(response.text)
    assert one(page, "#selection").tag == "div"
    assert not page.css("#timeline")
    assert one(page, "#tree .row.selected a.select").attributes["data-span"] == turn
    assert "turn 1" in one(page, "#detail h2").text()


def test_a_turn_shows_messages_by_role_the_answer_tokens_and_memory(
    client: TestClient, store: Store, research_run: str
) -> None:
    turn = span_of(store, research_run, "turn 1", "turn")
    page = html(client.get(f"/runs/{research_run}?span={turn}").text)
    detail = one(page, "#detail article.detail")
    roles = [node.text() for node in detail.css(".messages .message .role")]
    assert roles[:2] == ["system", "user"]
    assert "tool" in " ".join(roles)
    assert "You are a researcher. Topic:" in detail.text()
    assert "fetch_page" in one(detail, "section.answer .message").text()
    facts = detail.text()
    assert "contentHash" in facts
    assert "1 model call" in facts
    memory_keys = [node.text() for node in detail.css("section.memory table.diff td:first-child code")]
    assert memory_keys == ["topic", "sources"]


def test_a_tool_batch_and_one_of_its_results(client: TestClient, store: Store, research_run: str) -> None:
    batch = span_of(store, research_run, "web_search", "tools:execute")
    page = html(client.get(f"/runs/{research_run}?span={batch}").text)
    rows = page.css("#detail table.tool-results tbody tr")
    assert len(rows) == 1
    assert "web_search" in rows[0].text()
    assert "in production" in rows[0].text()
    result = html(client.get(f"/runs/{research_run}", params={"span": f"{batch}#0"}).text)
    assert "tool web_search" in one(result, "#detail h2").text()
    assert one(result, "#tree .row.selected a.select").attributes["data-span"] == f"{batch}#0"


def test_a_failed_run_shows_its_errors(client: TestClient, store: Store, tmp_path: Path) -> None:
    trace = record(store, tmp_path, lambda: failing.main({}), name="failing")
    page = html(client.get(f"/runs/{trace}").text)
    assert one(page, ".run-title .status-badge").text() == "failed"
    failed = [node.text() for node in page.css("#tree .row.s-failed .name")]
    assert "release-checker" in failed
    assert page.css("#bars rect.bar.s-failed")
    prober = span_of(store, trace, "prober", "agent")
    detail = one(html(client.get(f"/runs/{trace}?span={prober}").text), "#detail")
    assert "probe inconclusive" in one(detail, ".error-box .error-message").text()
    assert "Traceback" in one(detail, ".error-box pre.stack").text()


def test_zooming_returns_the_timeline_and_replaces_the_url(client: TestClient, store: Store, research_run: str) -> None:
    full = html(client.get(f"/runs/{research_run}").text)
    timeline = one(full, "#timeline")
    start, end = float(timeline.attributes["data-start"]), float(timeline.attributes["data-end"])
    middle = (start + end) / 2
    response = client.get(
        f"/runs/{research_run}/timeline",
        params={"start": middle, "end": middle + (end - start) / 10, "w": 800},
        headers={"HX-Request": "true"},
    )
    assert response.status_code == 200
    zoomed = one(html(response.text), "#timeline")
    assert zoomed.attributes["data-width"] == "800"
    assert float(zoomed.attributes["data-start"]) == pytest.approx(middle, abs=1e-3)
    replaced = parse_qs(urlsplit(response.headers["HX-Replace-Url"]).query)
    assert float(replaced["start"][0]) == pytest.approx(middle, abs=1e-3)
    for bar in html(response.text).css("#bars rect.bar"):
        assert 0 <= float(bar.attributes["x"]) <= 800


@pytest.mark.parametrize(
    ("query", "status", "message"),
    [
        ("start=yesterday&end=1", 400, "start must be a time in ms since the epoch"),
        ("start=10&end=5", 400, "the window must be at least"),
        ("start=nan&end=5", 400, "start must be a finite number"),
        ("start=10000000000000000&end=10000000000000002", 400, "start must be a time from year 1 to 9999"),
        ("span=nope", 404, "no span 'nope'"),
    ],
)
def test_bad_view_state_is_a_clear_error(
    client: TestClient, research_run: str, query: str, status: int, message: str
) -> None:
    response = client.get(f"/runs/{research_run}?{query}")
    assert response.status_code == status
    assert message in one(html(response.text), ".error-page .error-detail").text()


def test_a_run_whose_id_holds_separators_has_working_links(client: TestClient, store: Store) -> None:
    t = Trace("team/run 1?x#y&z")
    agent = t.start("agent", agentId="a")
    worker = t.start("agent", agent, agentId="w")
    t.end(t.start("turn", worker, step=0), success=True)
    t.end(worker, success=True)
    t.end(agent, success=True)
    append_events(store, t.events)
    page = html(client.get(run_url(t.trace_id)).text)
    assert one(page, "#workspace").attributes["data-trace"] == t.trace_id
    link = page.css("#tree a.select")[-1].attributes["href"]
    assert link.startswith("/runs/team%2Frun%201%3Fx%23y%26z?span=")
    selected = html(client.get(link).text)
    children = one(selected, "#tree .row.selected").parent
    assert children is not None
    for toggle in page.css("#tree button.toggle"):
        assert client.get(toggle.attributes["data-children"]).status_code == 200


def test_unknown_run_is_404(client: TestClient) -> None:
    response = client.get("/runs/0123456789abcdef0123456789abcdef")
    assert response.status_code == 404
    assert "no run" in one(html(response.text), ".error-page .error-detail").text()
    assert response.headers["server-timing"].startswith("app;dur=")


def test_a_crowded_parent_is_paged(client: TestClient, store: Store, tmp_path: Path) -> None:
    leaf = create_agent("worker", lambda props: props)

    async def fan_out(props: Any) -> Any:
        return await asyncio.gather(*[leaf(i) for i in range(120)])

    trace = record(store, tmp_path, lambda: create_agent("boss", fan_out)(None), name="crowd")
    page = html(client.get(f"/runs/{trace}").text)
    generation = next(
        node for node in page.css("#tree li.node") if node.css_first(".row .name").text() == "generation 0"
    )
    children = generation.css_first("ul.children")
    assert children is not None
    items = {cls: [n for n in children.iter() if n.attributes.get("class") == cls] for cls in ("node", "more")}
    assert len(items["node"]) == 50
    more = one(items["more"][0], "button")
    assert more.text() == "70 more…"
    second = html(client.get(more.attributes["hx-get"]).text)
    assert len(second.css("li.node > .row.k-agent")) == 50
    assert one(second, "li.more button").text() == "20 more…"
    # A worker on the third page is found when selected: the tree opens the page that holds it.
    last = search_spans(store, trace, "worker")
    selected = html(client.get(f"/runs/{trace}?span={last[-1].span_id}").text)
    assert one(selected, "#tree .row.selected a.select").attributes["data-span"] == last[-1].span_id


def test_span_search(client: TestClient, research_run: str) -> None:
    page = html(client.get(f"/runs/{research_run}/search", params={"q": "fetch_page"}).text)
    hits = page.css("ul.hits a.select")
    assert hits
    assert all("fetch_page" in hit.text() for hit in hits)
    nothing = html(client.get(f"/runs/{research_run}/search", params={"q": "zzz-nothing"}).text)
    assert "No span matches" in nothing.text()


def test_cached_calls_are_marked(client: TestClient, store: Store, tmp_path: Path) -> None:
    from devtool.core.debugger import dump_snapshot

    tool = create_tool("lookup", lambda key: key.upper())
    box: dict[str, Any] = {}

    async def handler(props: Any) -> Any:
        value = await tool(key="x")
        box.setdefault("snapshot", dump_snapshot())
        return value

    record(store, tmp_path, lambda: create_agent("a", handler)(None), name="first")
    replay = record(store, tmp_path, lambda: create_agent("a", handler)(None), name="replay", snapshot=box["snapshot"])
    page = html(client.get(f"/runs/{replay}").text)
    cached = [node for node in page.css("#tree .row") if node.css(".badge.cached")]
    # The batch: all of its calls were served from the journal.
    assert [node.css_first(".kind").text() for node in cached] == ["tools:execute"]
    (bar,) = page.css("#bars rect.bar.cached")
    assert "from the journal" in bar.attributes["data-title"]


def test_every_page_answers_over_times_stored_before_the_gate_had_limits(client: TestClient, store: Store) -> None:
    # Nanosecond times, a far-future end, and a run of two instants 1e16 ms apart: each put `/` and
    # the run page out of service (a date out of range, an axis that never reached its end).
    nanos = Trace(start_ms=1.79e18)
    root = nanos.start("agent")
    nanos.span("turn", root)
    nanos.end(root)
    far = Trace()
    root = far.start("agent")
    far.span("turn", root)
    far.end(root, at=1e16)
    huge = Trace()
    root = huge.start("agent")
    huge.end(root, at=1e300)
    store_unchecked(store, nanos.events + far.events + huge.events)
    pages = ["/", "/?q=agent", "/?status=running"]
    for trace in (nanos, far, huge):
        spans = [event["trace"]["spanId"] for event in trace.events]
        pages += run_pages(trace.trace_id, spans)
        pages.append(f"/runs/{trace.trace_id}/timeline?start=1790000000000&end=1790000000000.002&w=4000")
    for page in pages:
        started = time.perf_counter()
        response = client.get(page)
        assert response.status_code == 200, (page, response.text[-500:])
        assert time.perf_counter() - started < HANG_SECONDS, page
