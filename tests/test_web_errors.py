"""Error pages: clear, escaped, fragment for htmx; a bug is a 500 page and the server goes on."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from starlette.requests import Request
from starlette.routing import Route
from starlette.testclient import TestClient

from devtool.store import Store
from devtool.web import create_app
from tests.web_runs import html, one


@pytest.fixture
def client(store: Store) -> Iterator[TestClient]:
    app = create_app(store)

    def broken(request: Request) -> None:
        raise RuntimeError("<b>bug</b>")

    app.router.routes.append(Route("/broken", broken))
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client


def test_not_found_is_a_page_that_says_so(client: TestClient) -> None:
    response = client.get("/runs/<img src=x onerror=alert(1)>")
    assert response.status_code == 404
    page = html(response.text)
    assert one(page, ".error-page h1").text() == "404 · Not found"
    assert "'<img src=x onerror=alert(1)>'" in one(page, ".error-detail").text()
    assert not page.css("main img")


def test_an_htmx_request_gets_the_message_alone(client: TestClient) -> None:
    response = client.get("/runs/nope", headers={"HX-Request": "true"})
    assert response.status_code == 404
    assert "<html" not in response.text
    assert one(html(response.text), ".error-page").text()


def test_a_bug_is_a_500_page_and_the_server_keeps_serving(client: TestClient) -> None:
    response = client.get("/broken")
    assert response.status_code == 500
    assert "RuntimeError" in one(html(response.text), ".error-detail").text()
    assert "<b>bug</b>" not in response.text
    assert client.get("/").status_code == 200
