"""The process page through httpx: the billing-ops incident's lanes and run on one axis, entry state."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from selectolax.lexbor import LexborNode
from starlette.testclient import TestClient

from devtool.demo import billing
from devtool.store import Store, load_file
from devtool.web import create_app
from devtool.web.pages.entry_table import PAGE_SIZE
from devtool.web.pages.process_chart import COLUMNS, MAX_MARKS, MAX_SPAN_BARS
from tests.conftest import Trace
from tests.web_runs import html, one

HX = {"HX-Request": "true"}


@pytest.fixture(scope="module")
def incident(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    """The billing-ops incident, recorded once by the real recorder and agent: its journal and its run."""
    return asyncio.run(billing.run_incident(tmp_path_factory.mktemp("incident")))


@pytest.fixture
def loaded(store: Store, incident: tuple[Path, list[Path]]) -> dict[str, Any]:
    journal, traces = incident
    load_file(store, journal)
    trace_id = load_file(store, traces[0]).traces[0]
    entries = [json.loads(line) for line in journal.read_text().splitlines()]
    return {"trace_id": trace_id, "entries": entries}


@pytest.fixture
def client(store: Store) -> Iterator[TestClient]:
    with TestClient(create_app(store)) as client:
        yield client


def entry_id(loaded: dict[str, Any], entry_type: str, **data: Any) -> str:
    return next(
        e["entry_id"]
        for e in loaded["entries"]
        if e["entry_type"] == entry_type and all(e["data"].get(k) == v for k, v in data.items())
    )


def left(node: LexborNode) -> float:
    """Where an element is placed on the chart: `data-x`, percent of the window (`static/place.js`)."""
    return float(node.attributes["data-x"] or "nan")


def width(node: LexborNode) -> float:
    return float(node.attributes["data-w"] or "nan")


def write_journal(path: Path, types: list[str], *, process: str = "proc", step_ms: float = 1000.0) -> Path:
    start = datetime(2026, 7, 1, tzinfo=UTC).timestamp() * 1000
    lines = [
        json.dumps(
            {
                "entry_id": f"e{index:05d}",
                "process_id": process,
                "timestamp": datetime.fromtimestamp((start + index * step_ms) / 1000, tz=UTC).isoformat(),
                "entry_type": entry_type,
                "data": {"key": f"k{index}", "value": index} if entry_type == "context_update" else {"n": index},
            }
        )
        for index, entry_type in enumerate(types)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_the_journal_on_lanes_with_its_run(client: TestClient, loaded: dict[str, Any]) -> None:
    response = client.get("/processes/billing-ops")
    assert response.status_code == 200
    assert response.headers["vary"] == "HX-Request"
    page = html(response.text)
    assert one(page, "h1").text() == "billing-ops"
    assert one(page, "title").text() == "billing-ops · process · DevTool"
    lanes = [node.text() for node in page.css(".plane .plabel")]
    assert lanes == ["Lifecycle", "Triggers", "Invocations", "Context", "Conversation", "Tools & code", "Checkpoints"]
    marks = page.css(".mark[data-entry-id]")
    assert sorted(m.attributes["data-entry-id"] or "" for m in marks) == sorted(
        e["entry_id"] for e in loaded["entries"]
    )
    assert [m.attributes["data-type"] for m in page.css(".lane-triggers .mark")] == ["trigger_event"] * 2
    assert one(page, ".lane-triggers .mark.t-trigger_event[title*=whk_7731]")
    row = one(page, f'.pinv[data-trace-id="{loaded["trace_id"]}"]')
    assert one(row, ".inv-toggle").text().strip() == "▸ invocation 1 · reconciler"
    assert one(row, ".inv-toggle").attributes["href"] == f"/processes/billing-ops?open={loaded['trace_id']}"
    assert page.css(".pspans") == []  # collapsed until asked
    assert len(page.css("#entries tr.entry-row")) == 14
    assert one(page, ".pdetail-empty")


def test_an_opened_invocation_shows_the_webhook_inside_the_agent_call_it_raced(
    client: TestClient, loaded: dict[str, Any]
) -> None:
    trace_id = loaded["trace_id"]
    page = html(client.get("/processes/billing-ops", params={"open": trace_id}).text)
    bars = page.css(f'.pspans[data-trace-id="{trace_id}"] a.span-bar')
    assert 5 <= len(bars) <= 6 * COLUMNS
    agent = one(page, ".pspans a.span-bar.k-agent")
    assert agent.attributes["href"].startswith(f"/runs/{trace_id}?span=")  # type: ignore[union-attr]
    assert agent.attributes["hx-boost"] == "false"  # a full page load, not a swap into this page
    webhook = one(page, ".lane-triggers .mark[title*=whk_7731]")
    invocation = one(page, ".pinv .inv-bar")
    assert left(invocation) < left(webhook) < left(invocation) + width(invocation)
    # The tool batch that fetched the invoice is running when the webhook lands: one picture shows both.
    tools = [
        bar for bar in page.css(".pspans a.span-bar.k-tools-execute") if "fetch_invoice" in bar.attributes["title"]
    ]
    assert any(left(bar) <= left(webhook) <= left(bar) + width(bar) for bar in tools)
    toggle = one(page, ".inv-toggle")
    assert toggle.attributes["aria-expanded"] == "true"
    assert toggle.attributes["href"] == "/processes/billing-ops"  # closing it


def test_selecting_the_hold_shows_the_corrupted_state_before_it(client: TestClient, loaded: dict[str, Any]) -> None:
    hold = entry_id(loaded, "tool_call", tool="apply_account_hold")
    page = html(client.get("/processes/billing-ops", params={"entry": hold}).text)
    assert one(page, ".pdetail-type").text() == "tool_call"
    assert one(page, ".pdetail-summary").text() == 'apply_account_hold({"account": "acme-42"})'
    context = {
        one(row, ".ckey").text(strip=True): [cell.text(strip=True) for cell in row.css("td")[1:]]
        for row in page.css(".context-diff tbody tr")
    }
    assert context["account_status"] == ['"delinquent"', '"delinquent"']  # the webhook's write, under the agent
    assert one(page, f'#entries tr.selected[data-entry-id="{hold}"]')
    assert one(page, f'.mark.selected[data-entry-id="{hold}"]')
    assert left(one(page, ".pcursor")) == left(one(page, ".mark.selected"))
    assert one(page, "#entry-actions")  # where issue 9's rewind plan goes


def test_a_context_update_shows_its_change(client: TestClient, loaded: dict[str, Any]) -> None:
    flip = entry_id(loaded, "context_update", key="account_status", value="delinquent")
    page = html(client.get("/processes/billing-ops", params={"entry": flip}).text)
    changed = one(page, ".context-diff tr.change-changed")
    assert [cell.text(strip=True) for cell in changed.css("td")] == ["~account_status", '"active"', '"delinquent"']
    assert len(page.css(".context-diff tr.change-same")) == 1  # invoice_state, untouched
    assert "1 change, 2 keys" in one(page, ".state-block:nth-of-type(2) h4").text()


def test_lifecycle_and_conversation_before_and_after(client: TestClient, loaded: dict[str, Any]) -> None:
    start = entry_id(loaded, "state_transition", to_state="running")
    page = html(client.get("/processes/billing-ops", params={"entry": start}).text)
    assert one(page, ".lifecycle.changed .state-before").text() == "created"
    assert one(page, ".lifecycle.changed .state-after").text() == "running"
    prompt = entry_id(loaded, "user_prompt")
    page = html(client.get("/processes/billing-ops", params={"entry": prompt}).text)
    assert one(page, ".lifecycle").attributes["class"] == "lifecycle"  # unchanged
    added = one(page, ".conversation .msg-added")
    assert one(added, ".msg-role").text() == "user"
    assert one(added, ".msg-text").text() == "Reconcile account acme-42 for the July cycle."
    assert page.css(".conversation .msg-kept") == []


def test_htmx_swaps_the_workspace_and_history_restore_gets_the_page(client: TestClient, loaded: dict[str, Any]) -> None:
    hold = entry_id(loaded, "tool_call")
    fragment = client.get("/processes/billing-ops", params={"entry": hold}, headers=HX)
    assert fragment.status_code == 200
    assert fragment.headers["vary"] == "HX-Request"
    assert "<html" not in fragment.text
    root = html(fragment.text).css("body > *")
    assert [node.attributes["id"] for node in root] == ["process-workspace"]
    assert root[0].attributes["hx-boost"] == "true"
    assert root[0].attributes["data-entry"] == hold
    restored = client.get(
        "/processes/billing-ops", params={"entry": hold}, headers={**HX, "HX-History-Restore-Request": "true"}
    )
    page = html(restored.text)
    assert one(page, "#process-header h1").text() == "billing-ops"
    assert one(page, "#process-workspace").attributes["data-entry"] == hold


@pytest.mark.parametrize(
    ("path", "query", "status", "message"),
    [
        ("/processes/nope", {}, 404, "no process journal 'nope' in the store"),
        ("/processes/billing-ops", {"entry": "nope"}, 404, "no entry 'nope' in process journal 'billing-ops'"),
        ("/processes/billing-ops", {"start": "1", "end": "x"}, 400, "end must be a time in ms since the epoch"),
        ("/processes/billing-ops", {"start": "1"}, 400, "a window needs both start and end"),
        ("/processes/billing-ops", {"start": "5", "end": "5"}, 400, "the window must end after it starts"),
        ("/processes/billing-ops", {"page": "0"}, 400, "page must be a number from 1 to 1000000"),
        ("/processes/billing-ops", {"start": "nan", "end": "1"}, 400, "start must be a finite number"),
        ("/processes/billing-ops", {"start": "1", "end": "1e16"}, 400, "end must be a time from year 1 to 9999"),
    ],
)
def test_a_wrong_request_says_what_is_wrong(
    client: TestClient, loaded: dict[str, Any], path: str, query: dict[str, str], status: int, message: str
) -> None:
    response = client.get(path, params=query)
    assert response.status_code == status
    assert message in one(html(response.text), ".error-detail").text()


def test_a_long_journal_pages_its_table_to_the_selected_entry(client: TestClient, store: Store, tmp_path: Path) -> None:
    load_file(store, write_journal(tmp_path / "long.jsonl", ["context_update"] * 250))
    first = html(client.get("/processes/proc").text)
    assert [row.attributes["data-entry-id"] for row in first.css("#entries tr.entry-row")][:2] == ["e00000", "e00001"]
    assert one(first, ".ptable-count").text() == f"1–{PAGE_SIZE} of 250"
    selected = html(client.get("/processes/proc", params={"entry": "e00180"}).text)
    assert one(selected, ".ptable-count").text() == f"{PAGE_SIZE + 1}–{2 * PAGE_SIZE} of 250"
    assert one(selected, "#entries tr.selected").attributes["data-entry-id"] == "e00180"
    assert [a.attributes["href"] for a in selected.css(".ptable-pages a")] == [
        "/processes/proc?entry=e00180&page=1",
        "/processes/proc?entry=e00180&page=3",
    ]
    last = html(client.get("/processes/proc", params={"page": "3"}).text)
    assert len(last.css("#entries tr.entry-row")) == 50


def test_a_crowded_journal_merges_marks_per_column_and_zooms_on_them(
    client: TestClient, store: Store, tmp_path: Path
) -> None:
    types = ["context_update", "tool_call", "trigger_event"] * 2000
    load_file(store, write_journal(tmp_path / "crowded.jsonl", types, step_ms=0.5))
    page = html(client.get("/processes/proc").text)
    marks = page.css(".mark")
    assert len(marks) <= MAX_MARKS
    counted = sum(int(m.attributes.get("data-count") or 1) for m in marks)
    assert counted == 6000
    merged = page.css(".mark.merged")
    assert merged
    href = merged[0].attributes["href"] or ""
    assert "start=" in href
    assert "end=" in href
    zoomed = html(client.get(href).text)
    assert one(zoomed, ".pchart-whole").attributes["href"] == "/processes/proc"
    assert sum(int(m.attributes.get("data-count") or 1) for m in zoomed.css(".mark")) < 6000


def test_unknown_types_and_runs_not_loaded(client: TestClient, store: Store, tmp_path: Path) -> None:
    path = write_journal(tmp_path / "odd.jsonl", ["state_transition", "invocation_start", "custom:thing"])
    lines = path.read_text().splitlines()
    start = json.loads(lines[1])
    start["data"] = {"invocation": 1, "trace_id": "f" * 32}
    lines[1] = json.dumps(start)
    path.write_text("\n".join(lines) + "\n")
    load_file(store, path)
    page = html(client.get("/processes/proc").text)
    odd = one(page, ".lane-other .mark")
    assert "t-unknown" in (odd.attributes["class"] or "")
    assert odd.attributes["data-type"] == "custom:thing"
    assert one(page, '#entries tr[data-entry-id="e00002"] .entry-type').text() == "custom:thing"
    row = one(page, ".pinv")
    assert one(row, ".inv-missing").text() == "invocation 1 · run ffffffffffff"
    assert one(row, ".inv-note").text() == "run not loaded"
    assert row.css(".inv-toggle") == []


def test_an_opened_run_of_many_spans_stays_within_the_page_budget(
    client: TestClient, store: Store, tmp_path: Path
) -> None:
    run = Trace(start_ms=datetime(2026, 7, 1, tzinfo=UTC).timestamp() * 1000)
    root = run.start("agent", agentId="crowd")
    for _ in range(3000):
        worker = run.start("agent", root, agentId="worker")
        run.end(run.start("tools:execute", worker, toolNames=["t"]))
        run.end(worker)
    run.end(root)
    load_file(store, run.write(tmp_path / "crowd.jsonl"))
    entries = ["invocation_start", *["context_update"] * 10, "invocation_result"]
    path = write_journal(tmp_path / "j.jsonl", entries, step_ms=(run.now - run.events[0]["timestamp"]) / 11)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for line in (lines[0], lines[-1]):
        line["data"] = {"invocation": 1, "trace_id": run.trace_id}
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    load_file(store, path)
    page = html(client.get("/processes/proc", params={"open": run.trace_id}).text)
    bars = page.css(".pspans a.span-bar")
    assert len(bars) <= MAX_SPAN_BARS
    assert sum(int(bar.attributes["data-count"] or 0) for bar in bars) == 1 + 3000 * 2
    assert any(int(bar.attributes["data-count"] or 0) > 1 for bar in bars)
