"""Untrusted text on the run page in a real Chromium: every span of the hostile run, selected, runs no script."""

from __future__ import annotations

from playwright.sync_api import Dialog, Page, Response, expect

from e2e.conftest import ServerFactory
from tests import hostile


def test_walking_every_span_of_the_hostile_run_runs_no_script(page: Page, serve: ServerFactory) -> None:
    dialogs: list[str] = []

    def refuse(dialog: Dialog) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    failed: list[str] = []

    def record(response: Response) -> None:
        if response.status >= 500:
            failed.append(f"{response.status} {response.url}")

    page.on("dialog", refuse)
    page.on("response", record)
    server = serve(str(hostile.TRACE))
    page.goto(f"{server.url}runs/{hostile.TRACE_ID}")
    expect(page.locator("h1")).to_have_text(hostile.AGENT_ID)

    # Walk the tree with the keyboard, opening each node on the way: every step shows a span's detail.
    # ArrowRight opens a closed node, or moves into an open one (a failed run opens with its cause's path
    # open); where it did not move the focus, ArrowDown goes on.
    first = page.locator("#tree .row a.select").first
    first.click()
    detail = page.locator("#detail article")
    expect(detail).to_have_attribute("data-span", first.get_attribute("data-span") or "")
    visited = [detail.get_attribute("data-span")]
    focused = "() => document.activeElement.getAttribute('data-span')"
    for _ in range(30):
        page.keyboard.press("ArrowRight")
        page.wait_for_timeout(150)
        if page.evaluate(focused) == visited[-1]:
            page.keyboard.press("ArrowDown")
        try:
            expect(detail).not_to_have_attribute("data-span", visited[-1] or "", timeout=3000)
        except AssertionError:
            break  # the last row
        visited.append(detail.get_attribute("data-span"))
    assert len(set(visited)) == len(visited) >= 5  # each step a new span, to the end of the tree
    page.locator("#span-search").fill(hostile.SCRIPT)
    page.wait_for_timeout(500)

    assert dialogs == []
    assert failed == []
    assert page.locator(".pwned, iframe, [onerror], [onload], [ontoggle]").count() == 0
