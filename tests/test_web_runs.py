"""The runs page through httpx: every run and journal, search and status filter, fragments, the URL."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from devtool.store import Store, append_events, load_file
from devtool.web import create_app
from devtool.web.pages import runs_filter
from devtool.web.settings import Settings
from tests.conftest import CORPUS, Trace
from tests.web_runs import html, one

# Runs in 2001: older than the billing-ops journal they are listed with.
EPOCH = 1_000_000_000_000.0

JOURNAL = CORPUS / "promptise" / "billing-ops.journal.jsonl"
HX = {"HX-Request": "true"}


def make_run(
    name: str, *, at: float, failed: bool = False, running: bool = False, tools: int = 1, micro_usd: float | None = None
) -> Trace:
    t = Trace(start_ms=at)
    root = t.start("runWith")
    agent = t.start("agent", root, agentId=name)
    turn = t.start("turn", agent, step=0)
    call = t.start("model:call", turn)
    costs = None if micro_usd is None else {"micro_usd": micro_usd}
    t.end(call, usage={"promptTokens": 100, "completionTokens": 20}, costs=costs)
    t.end(turn)
    t.end(t.start("tools:execute", agent, toolNames=[f"tool{i}" for i in range(tools)]))
    t.end(agent, success=not failed)
    if not running:
        t.end(root, success=not failed)
    return t


@pytest.fixture
def runs(store: Store) -> dict[str, Trace]:
    made = {
        "done": make_run("archivist", at=EPOCH + 1_000_000.0, tools=2, micro_usd=955),
        "failed": make_run("breaker", at=EPOCH + 2_000_000.0, failed=True),
        "live": make_run("streamer", at=EPOCH + 3_000_000.0, running=True),
    }
    for trace in made.values():
        append_events(store, trace.events)
    load_file(store, JOURNAL)
    return made


@pytest.fixture
def client(store: Store) -> Iterator[TestClient]:
    with TestClient(create_app(store)) as client:
        yield client


def rows(text: str) -> list[str]:
    return [row.attributes["data-run-id"] or "" for row in html(text).css("tr.run-row")]


def test_every_run_and_journal_with_its_figures(client: TestClient, runs: dict[str, Trace]) -> None:
    response = client.get("/")
    assert response.status_code == 200
    assert response.headers["vary"] == "HX-Request"
    page = html(response.text)
    assert one(page, "title").text() == "Runs · DevTool"
    assert rows(response.text) == ["billing-ops", runs["live"].trace_id, runs["failed"].trace_id, runs["done"].trace_id]
    done = one(page, f'tr[data-trace-id="{runs["done"].trace_id}"]')
    cells = [cell.text(strip=True) for cell in done.css("td")]
    assert cells[0] == "runarchivist" + runs["done"].trace_id[:12] + "…"
    assert cells[1] == "completed"
    assert cells[2] == "2001-09-09 02:03:20.001 UTC"
    # duration, agents, prompts, tools, tokens, cost (money, not micro-dollars), events
    assert cells[3:10] == ["9.0 ms", "1", "1", "2", "120", "$0.000955", "10"]
    assert one(done, "a.run-link").attributes["href"] == f"/runs/{runs['done'].trace_id}"
    journal = one(page, 'tr[data-process-id="billing-ops"]')
    assert one(journal, "a.run-link").attributes["href"] == "/processes/billing-ops"
    assert one(journal, ".run-kind").text() == "process"
    assert one(journal, ".run-source").text(strip=True) == "billing-ops.journal.jsonl"
    assert one(page, f'tr[data-trace-id="{runs["failed"].trace_id}"] .status').text() == "failed"
    # Its model had no price: its cost is unknown, not $0.00.
    assert one(page, f'tr[data-trace-id="{runs["failed"].trace_id}"] .run-cost').text(strip=True) == "—"
    assert one(page, f'tr[data-trace-id="{runs["live"].trace_id}"] .status').text() == "running"


def test_search_and_status_filter(client: TestClient, runs: dict[str, Trace]) -> None:
    assert rows(client.get("/", params={"q": "BREAK"}).text) == [runs["failed"].trace_id]
    assert rows(client.get("/", params={"q": "acme-42"}).text) == ["billing-ops"]  # in an entry's data
    assert rows(client.get("/", params={"status": "running"}).text) == ["billing-ops", runs["live"].trace_id]
    assert rows(client.get("/", params={"status": "running", "q": "stream"}).text) == [runs["live"].trace_id]
    page = html(client.get("/", params={"status": "failed", "q": "break"}).text)
    # The form shows the filter the URL holds, so a reload or a copied link shows the same list.
    assert one(page, "#runs-q").attributes["value"] == "break"
    assert one(page, 'input[name="status"][checked]').attributes["value"] == "failed"


def test_no_match_says_so_and_offers_everything(client: TestClient, runs: dict[str, Trace]) -> None:
    page = html(client.get("/", params={"q": "no such thing"}).text)
    assert page.css("tr.run-row") == []
    assert one(page, ".empty-state").text(strip=True).startswith("No runs match “no such thing”")
    assert one(page, "a.clear-filters").attributes["href"] == "/"


def test_an_empty_store_says_how_to_load(client: TestClient) -> None:
    page = html(client.get("/").text)
    assert "No runs yet" in one(page, ".empty-state").text()
    assert page.css(".clear-filters") == []


def test_htmx_gets_the_results_fragment_and_history_restore_the_page(
    client: TestClient, runs: dict[str, Trace]
) -> None:
    fragment = client.get("/", params={"q": "arch"}, headers=HX)
    assert fragment.status_code == 200
    assert fragment.headers["vary"] == "HX-Request"
    assert "<html" not in fragment.text
    assert html(fragment.text).css("#runs-filter") == []
    assert rows(fragment.text) == [runs["done"].trace_id]
    restored = client.get("/", params={"q": "arch"}, headers={**HX, "HX-History-Restore-Request": "true"})
    assert "<html" in restored.text
    assert one(html(restored.text), "#runs-results table")
    assert rows(restored.text) == [runs["done"].trace_id]


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"status": "sideways"}, "there is no status 'sideways': choose completed, failed, running, or all"),
        ({"page": "0"}, "page must be a number from 1 to 10000, not '0'"),
        ({"page": "two"}, "page must be a number from 1 to 10000, not 'two'"),
        ({"q": "x" * 201}, "the search is 201 characters long; it can be at most 200"),
    ],
)
def test_a_bad_filter_is_a_400_that_says_why_and_still_lists(
    client: TestClient, runs: dict[str, Trace], query: dict[str, str], message: str
) -> None:
    response = client.get("/", params=query)
    assert response.status_code == 400
    page = html(response.text)
    assert one(page, ".notice-error").text() == message
    assert len(page.css("tr.run-row")) == 4  # the bad part is left out, the rest of the page works


def test_a_bad_filter_keeps_the_good_part(client: TestClient, runs: dict[str, Trace]) -> None:
    response = client.get("/", params={"status": "nope", "q": "arch"}, headers=HX)
    assert response.status_code == 400
    assert rows(response.text) == [runs["done"].trace_id]


def test_pages_of_runs(client: TestClient, store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    for index in range(5):
        append_events(store, make_run(f"agent{index}", at=EPOCH + 1_000_000.0 + index * 1000).events)
    monkeypatch.setattr(runs_filter, "PAGE_SIZE", 2)
    first = html(client.get("/").text)
    assert [one(row, ".run-title").text() for row in first.css("tr.run-row")] == ["agent4", "agent3"]
    assert [a.text() for a in first.css(".runs-pages a")] == ["Older →"]
    assert one(first, ".runs-pages a").attributes["href"] == "/?page=2"
    last = html(client.get("/", params={"page": "3"}).text)
    assert [one(row, ".run-title").text() for row in last.css("tr.run-row")] == ["agent0"]
    assert [a.attributes["href"] for a in last.css(".runs-pages a")] == ["/?page=2"]
    filtered = html(client.get("/", params={"q": "agent", "page": "2"}).text)
    assert [a.attributes["href"] for a in filtered.css(".runs-pages a")] == ["/?q=agent", "/?q=agent&page=3"]


def test_the_upload_form_says_its_limit(store: Store) -> None:
    with TestClient(create_app(store, Settings(max_upload_bytes=3 << 20))) as client:
        form = one(html(client.get("/").text), "form#upload-form")
    assert form.attributes["data-max-bytes"] == str(3 << 20)
    assert "up to 3 MiB" in one(form, ".dropzone-hint").text()
    assert form.attributes["hx-post"] == "/upload"
    assert form.attributes["enctype"] == "multipart/form-data"
