"""Pages and fragments: htmx swaps get the fragment, everything else the page, all `Vary: HX-Request`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from devtool.store import Store
from devtool.web import create_app


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    store = Store(tmp_path / "t.duckdb")
    with TestClient(create_app(store)) as client:
        yield client
    store.close()


def test_full_page_extends_base(client: TestClient) -> None:
    response = client.get("/")
    assert response.status_code == 200
    assert response.headers["vary"] == "HX-Request"
    assert "<html" in response.text
    assert "/static/vendor/htmx-2.0." in response.text


def test_htmx_request_gets_the_fragment(client: TestClient) -> None:
    response = client.get("/", headers={"HX-Request": "true"})
    assert response.headers["vary"] == "HX-Request"
    assert "<html" not in response.text
    assert "No runs yet" in response.text


def test_history_restore_gets_the_full_page(client: TestClient) -> None:
    response = client.get("/", headers={"HX-Request": "true", "HX-History-Restore-Request": "true"})
    assert "<html" in response.text


def test_vendored_htmx_is_served(client: TestClient) -> None:
    page = client.get("/").text
    src = page.split('src="', 1)[1].split('"', 1)[0]
    script = client.get(src)
    assert script.status_code == 200
    assert "htmx" in script.text[:2000]
