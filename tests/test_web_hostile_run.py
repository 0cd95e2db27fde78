"""Untrusted text on the run page: every span of the hostile runs, selected, renders as text."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import quote

import pytest
from starlette.testclient import TestClient

from devtool.store import Store, load_file
from devtool.web import create_app
from tests import hostile
from tests.web_runs import html, one


@pytest.fixture
def client(store: Store) -> Iterator[TestClient]:
    load_file(store, hostile.TRACE)
    with TestClient(create_app(store)) as client:
        yield client


def every_span(store: Store, trace_id: str) -> list[str]:
    spans = [span for (span,) in store.query("SELECT span_id FROM spans WHERE trace_id = ?", [trace_id])]
    results = store.query(
        "SELECT s.span_id, json_array_length(e.body, '$.toolResults') FROM spans s "
        "JOIN events e ON e.event_id = s.end_event_id WHERE s.trace_id = ? AND s.kind = 'tools:execute'",
        [trace_id],
    )
    return spans + [f"{span}#{index}" for span, count in results for index in range(count or 0)]


@pytest.mark.parametrize("trace_id", [hostile.TRACE_ID, hostile.EVIL_TRACE_ID])
def test_every_span_of_a_hostile_run_renders_as_text(client: TestClient, store: Store, trace_id: str) -> None:
    base = "/runs/" + quote(trace_id, safe="")
    page = html(client.get(base).text)
    assert hostile.injected(page) == []
    spans = every_span(store, trace_id)
    assert spans
    for span in spans:
        for url in (f"{base}?span={quote(span)}", f"{base}/select?span={quote(span)}"):
            response = client.get(url, headers={"HX-Request": "true"})
            assert response.status_code == 200, (url, response.text[:300])
            assert hostile.injected(html(response.text)) == [], url


def test_the_hostile_agent_id_reads_as_written(client: TestClient) -> None:
    page = html(client.get(f"/runs/{hostile.TRACE_ID}").text)
    assert hostile.AGENT_ID in [node.text() for node in page.css("#tree .row .name")]
    assert one(page, "h1").text() == hostile.AGENT_ID


def test_a_hostile_span_search_echoes_as_text(client: TestClient) -> None:
    response = client.get(f"/runs/{hostile.TRACE_ID}/search", params={"q": hostile.SCRIPT})
    assert hostile.injected(html(response.text)) == []
    assert hostile.SCRIPT in html(response.text).text()
