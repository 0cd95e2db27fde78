"""The runs page of a DevTool on a team's lake, in a real Chromium: the runs another DevTool published
are listed beside its own, marked `lake`, and one opens on a click (copied in once, then local)."""

from __future__ import annotations

import shutil
import time
import urllib.request
from pathlib import Path

import orjson
from playwright.sync_api import Page, expect

from devtool.store.lake import HEAD
from testkit.lake_runs import run_events, trace_id_of
from testkit.postgres import Lakes

from .conftest import SCREEN_SIZES, ServerFactory, Shoot, resize

SHOTS = Path("/work/wt/shots/lakeopen")


def post(url: str, events: list[dict[str, object]]) -> None:
    request = urllib.request.Request(
        f"{url}api/v1/traces", data=orjson.dumps(events), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 200


def open_from_list(page: Page, url: str, name: str) -> None:
    """Open lake run `name` from the runs page at `url`, once the DevTool lists it (its list of the lake's
    runs is read every second)."""
    page.goto(url)
    deadline = time.monotonic() + 120
    while page.locator("tr", has_text=name).locator(".source-lake").count() == 0:
        assert time.monotonic() < deadline, "the lake's run never showed"
        page.wait_for_timeout(500)
        page.reload()
    page.locator("tr", has_text=name).locator("a").first.click()


def test_the_runs_page_lists_the_lakes_runs_and_opens_one(
    page: Page, serve: ServerFactory, lakes: Lakes, shoot: Shoot, screenshot_path: object
) -> None:
    catalog, data = lakes.new()
    lake = ("--lake", catalog, "--lake-data", str(data))
    theirs = serve(*lake, "--lake-name", "ci-runner-7")
    mine = serve(*lake, "--lake-name", "my-laptop")
    for n, name in enumerate(("nightly eval", "support triage", "refund agent")):
        post(theirs.url, run_events(name, 8 + n, start_ms=1_700_000_000_000 + n * 60_000))
    post(mine.url, run_events("my local run", 5, start_ms=1_700_000_500_000))

    page.goto(mine.url)
    deadline = time.monotonic() + 60
    while page.locator(".source-lake").count() < 3:
        assert time.monotonic() < deadline, "the lake's runs never showed"
        page.wait_for_timeout(500)
        page.reload()
    expect(page.locator("tr", has_text="my local run").locator(".source-lake")).to_have_count(0)
    lake_row = page.locator("tr", has_text="support triage")
    expect(lake_row.locator(".source-lake")).to_have_text("lake")
    expect(lake_row.locator(".run-source")).to_contain_text("ci-runner-7")
    shoot(page, "lake-runs")
    SHOTS.mkdir(parents=True, exist_ok=True)
    for width, height in SCREEN_SIZES:
        shutil.copy(screenshot_path(f"lake-runs-{width}x{height}"), SHOTS / f"runs-{width}.png")  # type: ignore[operator]

    lake_row.locator("a").first.click()
    expect(page).to_have_url(f"{mine.url}runs/{trace_id_of('support triage')}")
    expect(page.locator("#timeline")).to_contain_text("step 8")
    resize(page, 1600, 1000)
    page.screenshot(path=SHOTS / "opened-1600.png")
    page.goto(mine.url)
    expect(page.locator("tr", has_text="support triage").locator(".source-lake")).to_have_count(0)


def test_a_big_lake_run_opens_on_its_head_and_says_the_rest_is_coming(
    page: Page, serve: ServerFactory, lakes: Lakes
) -> None:
    """A run of more events than a page waits for: it opens on its first events with a note saying how
    many are here, and a reload later shows it whole, without the note."""
    catalog, data = lakes.new()
    lake = ("--lake", catalog, "--lake-data", str(data))
    theirs = serve(*lake, "--lake-name", "ci-runner-7")
    mine = serve(*lake, "--lake-name", "my-laptop")
    spans = HEAD // 2 + 100
    post(theirs.url, run_events("nightly eval, long", spans))
    trace = trace_id_of("nightly eval, long")

    open_from_list(page, mine.url, "nightly eval, long")
    expect(page).to_have_url(f"{mine.url}runs/{trace}")
    note = page.locator("#lake-copying")
    expect(note).to_contain_text(f"{HEAD:,} of its {2 * spans + 2:,} events are here so far")
    SHOTS.mkdir(parents=True, exist_ok=True)
    for width, height in SCREEN_SIZES:
        resize(page, width, height)
        page.screenshot(path=SHOTS / f"copying-{width}.png")

    deadline = time.monotonic() + 120
    while note.count():
        assert time.monotonic() < deadline, "the rest of the run never came"
        page.wait_for_timeout(500)
        page.reload()
    expect(page.locator(".run-facts")).to_contain_text(f"{2 * spans + 2}")
