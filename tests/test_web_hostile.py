"""Untrusted text on the runs and process pages: a trace and a journal full of markup and scripts
render as text, on every page and fragment, in every place their text appears."""

from __future__ import annotations

import json
from collections.abc import Iterator
from urllib.parse import quote

import pytest
from starlette.testclient import TestClient

from devtool.store import Store, load_file
from devtool.web import create_app
from tests import hostile
from tests.web_runs import html, one

HX = {"HX-Request": "true"}
ENTRIES = [json.loads(line) for line in hostile.JOURNAL.read_text().splitlines()]
PROCESS_PATH = "/processes/" + quote(hostile.PROCESS_ID, safe="")


@pytest.fixture
def client(store: Store) -> Iterator[TestClient]:
    load_file(store, hostile.TRACE)
    load_file(store, hostile.JOURNAL)
    with TestClient(create_app(store)) as client:
        yield client


def test_the_runs_page_shows_ids_and_names_as_text(client: TestClient) -> None:
    response = client.get("/")
    assert response.status_code == 200
    page = html(response.text)
    assert hostile.injected(page) == []
    names = {row.attributes["data-run-id"]: one(row, ".run-title").text() for row in page.css("tr.run-row")}
    assert names == {
        hostile.TRACE_ID: hostile.AGENT_ID,
        hostile.EVIL_TRACE_ID: "'><svg onload=alert(2) class=pwned></svg>",
        hostile.PROCESS_ID: hostile.PROCESS_ID,
    }
    process_link = one(page, "tr[data-kind=journal] a.run-link").attributes["href"]
    assert process_link == PROCESS_PATH
    assert (
        one(page, "tr[data-kind=trace] .run-id[title*=svg]").attributes["title"] == f"trace id {hostile.EVIL_TRACE_ID}"
    )


@pytest.mark.parametrize("headers", [{}, HX], ids=["page", "fragment"])
def test_a_hostile_search_and_filter_echo_as_text(client: TestClient, headers: dict[str, str]) -> None:
    searched = client.get("/", params={"q": hostile.SCRIPT_NOWHERE}, headers=headers)
    page = html(searched.text)
    assert hostile.injected(page) == []
    assert f"No runs match “{hostile.SCRIPT_NOWHERE}”" in one(page, ".empty-state").text()
    if not headers:
        assert one(page, "#runs-q").attributes["value"] == hostile.SCRIPT_NOWHERE
    refused = client.get("/", params={"status": hostile.CLOSE}, headers=headers)
    assert refused.status_code == 400
    page = html(refused.text)
    assert hostile.injected(page) == []
    assert hostile.CLOSE[:40] in one(page, ".notice-error").text()


def test_searching_finds_runs_by_hostile_text(client: TestClient) -> None:
    page = html(client.get("/", params={"q": "alert(6)"}).text)
    assert hostile.injected(page) == []
    assert {row.attributes["data-run-id"] for row in page.css("tr.run-row")} == {hostile.TRACE_ID, hostile.PROCESS_ID}


@pytest.mark.parametrize("entry", [None, *(e["entry_id"] for e in ENTRIES)])
def test_the_process_page_shows_every_entry_as_text(client: TestClient, entry: str | None) -> None:
    params = {"open": hostile.TRACE_ID, **({"entry": entry} if entry else {})}
    response = client.get(PROCESS_PATH, params=params)
    assert response.status_code == 200
    page = html(response.text)
    assert hostile.injected(page) == []
    assert one(page, "#process-header h1").text() == hostile.PROCESS_ID
    assert page.css(".pspans a.span-bar")  # the hostile run opened under its invocation
    fragment = client.get(PROCESS_PATH, params=params, headers=HX)
    assert hostile.injected(html(fragment.text)) == []
    if entry is not None:
        assert page.css(".pdetail-facts dd")[0].text() == entry


def test_hostile_entry_text_reads_as_written(client: TestClient) -> None:
    context_update = next(e for e in ENTRIES if e["entry_type"] == "context_update")
    page = html(client.get(PROCESS_PATH, params={"entry": context_update["entry_id"]}).text)
    assert hostile.injected(page) == []
    added = one(page, ".context-diff tr.change-added")
    assert one(added, ".ckey").text(strip=True) == "+" + hostile.SCRIPT
    assert (
        one(page, ".pdetail-summary").text()
        == f'{hostile.SCRIPT} = "{hostile.AGENT_ID.replace(chr(34), chr(92) + chr(34))}"'
    )
    odd = one(page, ".lane-other .mark")
    assert odd.attributes["data-type"] == '<a class="pwned" href="javascript:alert(5)">click me</a>'
    prompt = next(e for e in ENTRIES if e["entry_type"] == "user_prompt")
    page = html(client.get(PROCESS_PATH, params={"entry": prompt["entry_id"]}).text)
    assert one(page, ".msg-added .msg-text").text() == hostile.CLOSE


def test_hostile_ids_in_a_wrong_request_are_text(client: TestClient) -> None:
    missing = client.get("/processes/" + quote(hostile.SCRIPT, safe=""))
    assert missing.status_code == 404
    page = html(missing.text)
    assert hostile.injected(page) == []
    assert hostile.SCRIPT in one(page, ".error-detail").text()
    no_entry = client.get(PROCESS_PATH, params={"entry": hostile.AGENT_ID})
    assert no_entry.status_code == 404
    assert hostile.injected(html(no_entry.text)) == []
