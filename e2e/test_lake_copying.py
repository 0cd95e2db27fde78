"""A run opened from the team's lake while the rest of it is copied, in a real Chromium: its spans whose end
is not here yet (its root among them) say `copying`, never `running`; the header has the lake's status
and the copy's progress; once copied, the page has the run's own ends. A run running live beside it
still says `running` (issue 44's page truth)."""

from __future__ import annotations

import re
import time
import urllib.request
from pathlib import Path

import orjson
from playwright.sync_api import Page, expect

from devtool.store.lake import HEAD
from testkit.lake_runs import run_events, trace_id_of
from testkit.postgres import Lakes

from .conftest import SCREEN_SIZES, ServerFactory, resize
from .test_lake_runs import open_from_list

SHOTS = Path("/work/wt/shots/lakecopy")
# A run copied in many small chunks after its head: its copy lasts long after the first page is drawn.
SPANS = 2 * HEAD
CHUNK = "100"
BATCH = 2000  # events a POST


def post(url: str, events: list[dict[str, object]]) -> None:
    for at in range(0, len(events), BATCH):
        request = urllib.request.Request(
            f"{url}api/v1/traces",
            data=orjson.dumps(events[at : at + BATCH]),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            assert response.status == 200


def shots(page: Page, name: str) -> None:
    """The page at each screen size, as `<name>-<width>.png` in SHOTS (what a person looks at)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    for width, height in reversed(SCREEN_SIZES):
        resize(page, width, height)
        page.screenshot(path=SHOTS / f"{name}-{width}.png")


def test_a_run_being_copied_from_the_lake_says_copying_not_running(
    page: Page, serve: ServerFactory, lakes: Lakes
) -> None:
    catalog, data = lakes.new()
    lake = ("--lake", catalog, "--lake-data", str(data))
    theirs = serve(*lake, "--lake-name", "ci-runner-7")
    mine = serve(*lake, "--lake-name", "my-laptop", "--lake-copy-chunk", CHUNK)
    post(theirs.url, run_events("nightly eval, copied", SPANS))
    trace = trace_id_of("nightly eval, copied")
    # A run of this DevTool's own, running: its root and its last step started, neither ended.
    post(mine.url, run_events("my agent, running", 4)[:-2])
    running = trace_id_of("my agent, running")

    resize(page, *SCREEN_SIZES[-1])
    open_from_list(page, mine.url, "nightly eval, copied")
    expect(page).to_have_url(f"{mine.url}runs/{trace}")

    # Drawn from its head: the note says so, and what has no end here is copying, not running.
    expect(page.locator("#lake-copying")).to_contain_text(f"{HEAD:,} of its {2 * SPANS + 2:,} events are here")
    header = page.locator("#run-header")
    expect(header.locator(".status-badge")).to_have_text("completed")
    expect(header.locator("#lake-copy-badge")).to_contain_text("copying from the team's lake")
    # Its figures are the whole run's, as the lake lists it (not those of its head), but for the events here.
    facts = header.locator(".run-facts")
    expect(facts).to_have_attribute("title", "the whole run, as the team's lake lists it")
    expect(facts.locator("div", has=page.locator("dt", has_text="spans")).locator("dd")).to_have_text(f"{SPANS + 1}")
    expect(facts.locator("div", has=page.locator("dt", has_text="events")).locator("dd")).to_contain_text(
        f"of {2 * SPANS + 2:,}"
    )
    expect(facts.locator(".so-far")).to_have_count(0)
    root = page.locator("#tree > li.node").first
    expect(root.locator(".row").first).to_have_class(re.compile(r"\bs-copying\b"))
    expect(root.locator(".badge.s-copying").first).to_have_text("copying")
    expect(page.locator("#timeline rect.bar.k-runWith")).to_have_class(re.compile(r"\bs-copying\b"))
    expect(page.locator("#workspace .s-running")).to_have_count(0)
    expect(page.locator("#workspace")).not_to_contain_text("running")
    expect(page.locator("#run-live")).not_to_have_attribute("sse-connect", re.compile("."))

    # Its detail: copying, with no "after" to rewind to yet.
    root.locator("a.select").first.click()
    detail = page.locator("#detail-status")
    expect(detail).to_have_text("copying")
    expect(detail).to_have_attribute(
        "title", re.compile("^not here yet: this run is being copied from the team's lake")
    )
    expect(page.locator("#rewind-after")).to_be_disabled()
    expect(page.locator("#lake-copying")).to_be_visible()  # not reloaded: still the page drawn mid-copy
    shots(page, "copying")

    # Once copied (a reload), the run's own ends: the root completed, nothing copying.
    deadline = time.monotonic() + 300
    while page.locator("#lake-copying").count():
        assert time.monotonic() < deadline, "the rest of the run never came"
        page.wait_for_timeout(1000)
        page.reload()
    expect(page.locator("#detail-status")).to_have_text("completed")
    expect(page.locator("#workspace .s-copying")).to_have_count(0)
    expect(page.locator("#timeline rect.bar.k-runWith")).to_have_class(re.compile(r"\bs-completed\b"))
    expect(page.locator("#rewind-after")).to_be_enabled()
    shots(page, "copied")

    # The run running on this DevTool: running, followed live.
    page.goto(f"{mine.url}runs/{running}")
    expect(page.locator("#run-header .status-badge")).to_have_text("running")
    expect(page.locator("#tree > li.node .row").first).to_have_class(re.compile(r"\bs-running\b"))
    expect(page.locator("#workspace .s-copying")).to_have_count(0)
    expect(page.locator("#run-live")).to_have_attribute("sse-connect", re.compile(f"^/runs/{running}/live"))
