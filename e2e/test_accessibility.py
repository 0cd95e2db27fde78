"""No serious or critical axe-core violation on any page of the DevTool, in a real Chromium over
`devtool demo` (and a DevTool with a team token for the login page): so it stays fixed."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from e2e.axe import severe_violations
from e2e.conftest import Server, ServerFactory, resize
from e2e.demo_server import running_demo
from e2e.test_rewind import choose_mode, replay


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with running_demo(tmp_path_factory.mktemp("demo-home")) as server:
        yield server


class Checked:
    """The pages checked so far and what axe found on each."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.found: dict[str, list[str]] = {}

    def __call__(self, name: str) -> None:
        self.page.wait_for_load_state("networkidle")
        for width, height in ((1024, 768), (1600, 1000)):
            resize(self.page, width, height)
            if problems := severe_violations(self.page):
                self.found[f"{name} at {width}"] = problems

    def report(self) -> str:
        return "\n".join(f"{name}:\n  " + "\n  ".join(problems) for name, problems in self.found.items())


def test_every_page_has_no_serious_violation(page: Page, demo: Server) -> None:
    check = Checked(page)
    page.goto(demo.url)
    page.locator("#live-hint summary").click()
    check("runs")
    page.locator("tr.run-row", has_text="release-checker").locator("a[href^='/runs/']").first.click()
    page.wait_for_url("**/runs/*")
    check("run")
    page.locator("#tree .row.s-failed a.select").last.click()
    expect(page.locator("#detail article")).to_be_visible()
    check("run, a failed span selected")
    page.goto(demo.url)
    page.locator("tr.run-row", has_text="research-lead").locator("a[href^='/runs/']").last.click()
    page.wait_for_url("**/runs/*")
    page.locator("#tree .row a.select").first.click()
    expect(page.locator("#rewind-after")).to_be_enabled()
    check("run, the root selected")
    page.locator("#rewind-after").click()
    page.wait_for_url("**/snapshots/*")
    check("snapshot")
    snapshot = page.url
    page.goto(f"{snapshot}/replay")
    check("replay confirm")
    page.goto(snapshot)
    replay(page)
    check("replay's run")
    page.locator("#compare-original").click()
    page.wait_for_url(re.compile(r".*/compare\?a=.*"))
    check("compare")
    page.goto(f"{demo.url}snapshots")
    check("snapshots")
    page.goto(f"{demo.url}processes/billing-ops")
    check("process")
    page.locator(".mark[title*=apply_account_hold]").first.click()
    expect(page.locator(".pdetail-type")).to_have_text("tool_call")
    choose_mode(page, "code_only")
    check("process, an entry and its rewind plan")
    page.locator(".inv-toggle").click()
    page.wait_for_url("**open=*")
    check("process, an invocation open")
    page.goto(f"{demo.url}runs/{'f' * 32}")
    check("error: no such run")
    page.goto(f"{demo.url}runs/{'f' * 32}/compare")
    check("error: compare without a run")
    page.goto(f"{demo.url}processes/billing-ops?entry=nope")
    check("error: no such entry")
    assert not check.found, check.report()


def test_the_login_page_has_no_serious_violation(page: Page, serve: ServerFactory) -> None:
    server = serve(env={**os.environ, "DEVTOOL_TOKEN": "a11y-team-token-0123456789"})
    page.goto(server.url)
    expect(page.locator("#login-title")).to_be_visible()
    check = Checked(page)
    check("login")
    page.locator("#login-token").fill("not the token")
    page.locator("#login-submit").click()
    expect(page.locator("#login-error")).to_be_visible()
    check("login, refused")
    assert not check.found, check.report()
