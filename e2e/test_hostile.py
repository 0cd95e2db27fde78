"""Untrusted text in a real Chromium: the hostile trace and journal, clicked through, run no script.

Every payload in the fixtures would open a dialog (`alert(`) or add an element with the class
`pwned` if it ran; the test fails on either, on the runs page, the process page and every swap, and
on any request the pages make that the server answers with a 5xx.
"""

from __future__ import annotations

from urllib.parse import quote

from playwright.sync_api import Dialog, Page, Response, expect

from e2e.conftest import ServerFactory
from tests import hostile


def test_the_hostile_files_run_no_script(page: Page, serve: ServerFactory) -> None:
    dialogs: list[str] = []

    def refuse(dialog: Dialog) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", refuse)
    failed: list[str] = []

    def record(response: Response) -> None:
        if response.status >= 500:
            failed.append(f"{response.status} {response.url}")

    page.on("response", record)
    server = serve(str(hostile.TRACE), str(hostile.JOURNAL))

    page.goto(server.url)
    expect(page.locator("tr.run-row")).to_have_count(3)
    expect(page.locator(f'tr[data-trace-id="{hostile.TRACE_ID}"] .run-title')).to_have_text(hostile.AGENT_ID)
    page.locator("#runs-q").fill(hostile.SCRIPT_NOWHERE)
    expect(page.locator(".empty-state")).to_contain_text(hostile.SCRIPT_NOWHERE)
    assert page.locator("#runs-q").input_value() == hostile.SCRIPT_NOWHERE

    page.goto(f"{server.url}processes/{quote(hostile.PROCESS_ID, safe='')}")
    expect(page.locator("h1")).to_have_text(hostile.PROCESS_ID)
    page.locator(".inv-toggle").click()
    expect(page.locator(".pspans a.span-bar").first).to_be_visible()
    rows = page.locator("#entries tr.entry-row")
    count = rows.count()
    assert count == 13
    rows.first.locator("a.entry-link").click()
    expect(rows.first).to_have_class("entry-row selected")
    for index in range(1, count):
        page.keyboard.press("ArrowDown")
        expect(rows.nth(index)).to_have_class("entry-row selected")
    expect(page.locator(".pdetail-summary")).to_contain_text('<a class=\\"pwned\\" href=\\"javascript:alert(5)\\">')

    page.reload()
    expect(page.locator(".pdetail")).to_be_visible()
    assert dialogs == []
    assert failed == []  # every swap and every fragment it loaded was answered
    assert page.locator(".pwned, iframe, [onerror], [onload], [ontoggle]").count() == 0
