"""Pages and fragments: htmx swaps get the fragment, everything else the page, all `Vary: HX-Request`;
and the templates compiled once, kept between processes, loaded as a server starts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import jinja2
import pytest
from starlette.testclient import TestClient

from devtool.store import Store
from devtool.web import create_app
from devtool.web.state import AppState
from devtool.web.templating import TemplateCache, load_all, make_environment


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


def test_a_started_server_has_every_template_loaded(client: TestClient) -> None:
    templates = AppState.of(client.app).templates  # type: ignore[arg-type]
    assert templates.cache is not None
    assert {name for _, name in templates.cache} == set(templates.list_templates())


def test_compiled_templates_are_kept_for_the_next_process(tmp_path: Path) -> None:
    cache = TemplateCache(str(tmp_path))
    first, later = make_environment(), make_environment()
    first.bytecode_cache = later.bytecode_cache = cache
    load_all(first)
    names = later.list_templates()
    assert len(list(tmp_path.iterdir())) == len(names)
    for name in names:
        source, filename, _ = later.loader.get_source(later, name)  # type: ignore[union-attr]
        assert cache.get_bucket(later, name, filename, source).code is not None, name


def test_a_template_changed_since_it_was_cached_is_compiled_again(tmp_path: Path) -> None:
    folder = tmp_path / "templates"
    folder.mkdir()
    (folder / "page.html").write_text("one {{ x }}")
    cache = TemplateCache(str(tmp_path / "cache"))
    (tmp_path / "cache").mkdir()

    def rendered() -> str:
        env = jinja2.Environment(loader=jinja2.FileSystemLoader(folder), bytecode_cache=cache, autoescape=True)
        return env.get_template("page.html").render(x="<b>")

    assert rendered() == "one &lt;b&gt;"
    (folder / "page.html").write_text("two {{ x }}")
    assert rendered() == "two &lt;b&gt;"


def test_a_cache_that_cannot_be_written_fails_no_page(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    folder = tmp_path / "templates"
    folder.mkdir()
    (folder / "page.html").write_text("hello {{ x }}")
    gone = TemplateCache(str(tmp_path / "no such folder"))
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(folder), bytecode_cache=gone, autoescape=True)
    assert env.get_template("page.html").render(x="you") == "hello you"
    assert "compiled template not cached" in caplog.text
