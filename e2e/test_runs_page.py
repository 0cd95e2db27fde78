"""The runs page in a real Chromium against a real `devtool serve`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from playwright.sync_api import Page, expect

from e2e.conftest import ServerFactory


def test_empty_store_says_how_to_load_a_trace(
    page: Page, serve: ServerFactory, screenshot_path: Callable[[str], Path]
) -> None:
    server = serve()
    page.goto(server.url)
    expect(page).to_have_title("Runs · DevTool")
    expect(page.locator(".empty-state")).to_contain_text("No runs yet: load a trace with")
    # htmx loaded from the vendored copy: the page is wired for fragments.
    assert page.evaluate("typeof window.htmx") == "object"
    assert page.evaluate("window.htmx.version").startswith("2.0.")
    page.screenshot(path=screenshot_path("runs-empty"), full_page=True)
