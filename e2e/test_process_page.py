"""The process page in a real Chromium over `devtool demo`: the billing-ops incident, entry by entry."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from e2e.conftest import Server, Shoot
from e2e.demo_server import running_demo


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with running_demo(tmp_path_factory.mktemp("demo-home")) as server:
        yield server


def left(page: Page, selector: str) -> float:
    return float(page.locator(selector).evaluate("node => parseFloat(node.style.left)"))


def test_select_an_entry_open_the_run_and_share_the_view(page: Page, demo: Server, shoot: Shoot) -> None:
    page.goto(demo.url)
    page.locator('tr[data-kind="journal"]').click()
    page.wait_for_url("**/processes/billing-ops")
    expect(page.locator(".pdetail-empty")).to_be_visible()

    # The webhook that raced the reconcile: select it on its lane.
    webhook = page.locator(".lane-triggers .mark[title*=whk_7731]")
    entry_id = webhook.get_attribute("data-entry-id")
    webhook.click()
    page.wait_for_url(f"**/processes/billing-ops?entry={entry_id}")
    expect(page.locator(".pdetail-type")).to_have_text("trigger_event")
    expect(page.locator(".pdetail-summary")).to_contain_text("webhook whk_7731")
    expect(page.locator(f'#entries tr.selected[data-entry-id="{entry_id}"]')).to_be_visible()
    expect(page.locator(".context-diff tbody tr")).to_have_count(2)
    expect(page.locator(".pcursor")).to_be_visible()

    # The next entry is the write it caused: account_status flips under the running agent.
    page.keyboard.press("ArrowDown")
    expect(page.locator(".pdetail-summary")).to_have_text('account_status = "delinquent"')
    flip = page.locator(".context-diff tr.change-changed")
    expect(flip.locator("td").nth(1)).to_have_text('"active"')
    expect(flip.locator("td").nth(2)).to_have_text('"delinquent"')
    page.keyboard.press("ArrowUp")
    page.wait_for_url(f"**/processes/billing-ops?entry={entry_id}")
    expect(page.locator(f'#entries tr.selected[data-entry-id="{entry_id}"]')).to_be_visible()

    # Open the invocation: its run's spans appear on the same axis, the webhook inside the agent call.
    page.locator(".inv-toggle").click()
    page.wait_for_url("**open=*")
    agent = page.locator(".pspans a.span-bar.k-agent")
    expect(agent).to_be_visible()
    cursor = page.locator(".pcursor").bounding_box()
    box = agent.bounding_box()
    assert cursor is not None
    assert box is not None
    assert box["x"] < cursor["x"] < box["x"] + box["width"]
    shoot(page, "process")

    # A reload (a copied link) shows the same entry and the opened run.
    shared = page.url
    page.goto(shared)
    expect(page.locator(".pdetail-type")).to_have_text("trigger_event")
    expect(page.locator(".pspans a.span-bar.k-agent")).to_be_visible()
    assert left(page, ".pcursor") == left(page, ".mark.selected")

    # Back through every step: the run closed, the entries stepped through, nothing selected; forward again.
    page.go_back()
    expect(page.locator(".pspans")).to_have_count(0)
    expect(page.locator(".pdetail-type")).to_have_text("trigger_event")
    page.go_back()
    expect(page.locator(".pdetail-summary")).to_have_text('account_status = "delinquent"')
    page.go_back()
    expect(page.locator(".pdetail-type")).to_have_text("trigger_event")
    page.go_back()
    expect(page.locator(".pdetail-empty")).to_be_visible()
    page.go_forward()
    expect(page.locator(".pdetail-type")).to_have_text("trigger_event")
    expect(page.locator(f'#entries tr.selected[data-entry-id="{entry_id}"]')).to_be_visible()


def test_a_span_of_the_opened_run_goes_to_the_run_page(page: Page, demo: Server) -> None:
    page.goto(f"{demo.url}processes/billing-ops")
    page.locator(".inv-toggle").click()
    agent = page.locator(".pspans a.span-bar.k-agent")
    href = agent.get_attribute("href") or ""
    span_id = href.split("span=")[1]
    agent.click()
    page.wait_for_url(f"**/runs/*?span={span_id}")
    expect(page.locator("h1")).to_have_text("reconciler")
    expect(page.locator("#workspace")).to_have_attribute("data-span", span_id)
    page.go_back()
    page.wait_for_url("**/processes/billing-ops?open=*")
    expect(page.locator(".pspans a.span-bar.k-agent")).to_be_visible()


def test_zoom_to_an_invocation_and_back_to_the_whole_journal(page: Page, demo: Server) -> None:
    page.goto(f"{demo.url}processes/billing-ops")
    whole = page.locator(".pchart").get_attribute("data-end")
    marks = page.locator(".mark").count()
    page.locator(".inv-links a", has_text="zoom").click()
    page.wait_for_url("**start=*")
    expect(page.locator(".pchart-whole")).to_be_visible()
    assert page.locator(".pchart").get_attribute("data-end") != whole
    # The invocation fills the window but for 8% of its length on each side; entries outside are not drawn.
    assert left(page, ".inv-bar") == pytest.approx(100 * 0.08 / 1.16, abs=0.05)
    lefts = page.locator(".mark").evaluate_all("nodes => nodes.map(node => parseFloat(node.style.left))")
    assert all(0 <= x <= 100 for x in lefts)
    page.locator(".pchart-whole").click()
    page.wait_for_url("**/processes/billing-ops")
    expect(page.locator(".mark")).to_have_count(marks)
