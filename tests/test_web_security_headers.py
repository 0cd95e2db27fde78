"""Every answer carries the security headers, and the pages hold nothing the Content-Security-Policy refuses
(no inline script, no `style` attribute, no `data:` URL): the browser tests check the same in Chromium."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.testclient import TestClient

from devtool.demo import billing, research
from devtool.store import Store, load_file
from devtool.web import create_app
from devtool.web.settings import Settings
from tests.conftest import Trace
from tests.web_runs import html, record

POLICY = "default-src 'self'; frame-ancestors 'none'"


@pytest.fixture
def client(store: Store) -> Iterator[TestClient]:
    with TestClient(create_app(store)) as client:
        yield client


def assert_secured(headers: dict[str, str] | object) -> None:
    assert headers["content-security-policy"] == POLICY  # type: ignore[index]
    assert headers["x-content-type-options"] == "nosniff"  # type: ignore[index]
    assert headers["referrer-policy"] == "same-origin"  # type: ignore[index]
    assert headers["x-frame-options"] == "DENY"  # type: ignore[index]  # frame-ancestors, for old browsers


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/"),
        ("GET", "/static/app.css"),
        ("GET", "/runs/nothing-here"),  # an error page
        ("POST", "/api/v1/traces"),  # JSON, refused: not an array
        ("GET", "/process-rewind?process=p&entry=e"),  # a redirect
    ],
)
def test_every_kind_of_answer_carries_the_headers(client: TestClient, method: str, path: str) -> None:
    response = client.request(method, path, content=b"{}", follow_redirects=False)
    assert response.status_code in (200, 308, 400, 404)
    assert_secured(response.headers)


def test_the_page_of_an_unexpected_error_carries_them_too(store: Store) -> None:
    def broken(request: Request) -> Response:
        raise RuntimeError("a bug")

    app = create_app(store)
    app.router.routes.append(Route("/broken", broken))
    with TestClient(app, raise_server_exceptions=False) as client:
        response = client.get("/broken")
    assert response.status_code == 500
    assert "hit a bug (RuntimeError)" in response.text
    assert_secured(response.headers)


def test_the_pages_hold_nothing_the_policy_refuses(client: TestClient, store: Store, tmp_path: Path) -> None:
    trace_id = record(store, tmp_path, lambda: research.main({"question": "Rust or Go?", "delay": 0}))
    journal, traces = asyncio.run(billing.run_incident(tmp_path / "incident"))
    for path in (journal, *traces):
        load_file(store, path)
    pages = ["/", f"/runs/{trace_id}", f"/processes/{billing.PROCESS_ID}", "/snapshots"]
    for path in pages:
        response = client.get(path)
        assert response.status_code == 200, path
        assert_secured(response.headers)
        page = html(response.text)
        assert [n.tag for n in page.css("[style]")] == [], path
        assert [n.text() for n in page.css("script:not([src])")] == [], path
        assert [n.tag for n in page.css("style")] == [], path
        assert "data:" not in response.text, path
    chart = html(client.get(f"/processes/{billing.PROCESS_ID}").text)
    assert chart.css(".mark[data-x]")  # positions come as data, placed by static/place.js


def test_the_server_timing_says_how_long_a_page_waited_for_live_appends_to_be_derived(store: Store) -> None:
    t = Trace()
    t.start("agent")
    # Derives come at most once a minute here, so the page finds the posted events not yet derived. The
    # agent is still running: a small trace exported whole would be derived in its own append.
    with TestClient(create_app(store, Settings(live_interval=60))) as client:
        assert client.post("/api/v1/traces", json=t.events).status_code == 200
        waited = client.get(f"/runs/{t.trace_id}")
        settled = client.get(f"/runs/{t.trace_id}")
    assert waited.status_code == 200
    assert re.fullmatch(r"app;dur=[\d.]+, settle;dur=[\d.]+", waited.headers["server-timing"])
    assert re.fullmatch(r"app;dur=[\d.]+", settled.headers["server-timing"])  # nothing left to wait for
