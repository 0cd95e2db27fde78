"""The run page in a real Chromium: zoom and pan the timeline, select spans, keys, links that restore."""

from __future__ import annotations

import asyncio
import json
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from devtool.core import JsonlSink, create_agent, create_tool, run_with
from devtool.demo.generate import generate
from e2e.conftest import SCREEN_SIZES, Server, ServerFactory, Shoot, resize
from tests.conftest import Trace


@pytest.fixture(scope="module")
def demo_files(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    folder = tmp_path_factory.mktemp("demo")
    # Playwright's sync API owns this thread's event loop: record the demo runs on another thread.
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, generate(folder)).result()


@pytest.fixture
def demo(demo_files: list[Path], serve: ServerFactory) -> tuple[Server, str]:
    """A server over the demo data, and the trace id of the research run."""
    research = next(path for path in demo_files if path.name == "research.trace.jsonl")
    trace_id = json.loads(research.read_text().splitlines()[0])["trace"]["traceId"]
    return serve(*map(str, demo_files)), trace_id


def window(page: Page) -> tuple[float, float]:
    timeline = page.locator("#timeline")
    return float(timeline.get_attribute("data-start") or 0), float(timeline.get_attribute("data-end") or 0)


def open_run(page: Page, url: str) -> None:
    """Open a run page and wait for its timeline to be drawn for the pane's width: a first visit draws
    it at a default width and asks for it again at the pane's (run.js `fitWidth`), so bars read before
    that are replaced under the reader."""
    page.goto(url)
    page.wait_for_function(
        "() => { const t = document.querySelector('#timeline'), pane = document.querySelector('.timeline-pane');"
        " return t && pane && Math.abs(Math.max(200, Math.floor(pane.clientWidth - 22)) - +t.dataset.width) <= 8"
        " && !document.querySelector('.htmx-request, .htmx-settling, .htmx-swapping'); }"
    )


def wait_for_window_change(page: Page, before: tuple[float, float]) -> tuple[float, float]:
    page.wait_for_function(
        "([s, e]) => { const t = document.querySelector('#timeline');"
        " return t && (+t.dataset.start !== s || +t.dataset.end !== e); }",
        arg=list(before),
    )
    return window(page)


def test_zoom_pan_select_and_a_copied_link_restores_the_view(
    page: Page, demo: tuple[Server, str], shoot: Shoot
) -> None:
    server, trace_id = demo
    page.goto(f"{server.url}runs/{trace_id}")
    expect(page.locator("h1")).to_have_text("research-lead")
    expect(page.locator("#bars rect.bar.k-agent").first).to_be_visible()
    whole = window(page)

    # Zoom in with the key, then with a brushed range, then with the wheel; pan with shift+wheel.
    page.keyboard.press("]")
    after_key = wait_for_window_change(page, whole)
    assert after_key[1] - after_key[0] == pytest.approx((whole[1] - whole[0]) / 2, rel=0.01)
    assert "start=" in page.url

    box = page.locator("#bars").bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + box["width"] * 0.3, box["y"] + 10)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.5, box["y"] + 10, steps=5)
    page.mouse.up()
    brushed = wait_for_window_change(page, after_key)
    assert brushed[1] - brushed[0] == pytest.approx((after_key[1] - after_key[0]) * 0.2, rel=0.05)

    page.mouse.move(box["x"] + box["width"] * 0.5, box["y"] + 20)
    page.mouse.wheel(0, 300)
    zoomed_out = wait_for_window_change(page, brushed)
    assert zoomed_out[1] - zoomed_out[0] > brushed[1] - brushed[0]
    page.keyboard.down("Shift")
    page.mouse.wheel(0, 200)
    page.keyboard.up("Shift")
    panned = wait_for_window_change(page, zoomed_out)
    assert panned[1] - panned[0] == pytest.approx(zoomed_out[1] - zoomed_out[0], rel=0.01)

    # Select a researcher in the tree: the detail shows it and the timeline marks it.
    page.locator("#tree a.select", has_text="researcher").first.click()
    expect(page.locator("#detail h2")).to_contain_text("agent researcher")
    selected = page.locator("#tree .row.selected a.select").get_attribute("data-span")
    assert selected
    assert f"span={selected}" in page.url
    expect(page.locator("#detail .memory")).to_contain_text("topic")

    # Keys move through the tree: down to the next row, right to open the selected node.
    rows = page.locator("#tree .row a.select")
    spans = [rows.nth(i).get_attribute("data-span") for i in range(rows.count())]
    following = spans[spans.index(selected) + 1]
    page.keyboard.press("ArrowDown")
    expect(page.locator("#tree .row.pending a.select, #tree .row.selected a.select").last).to_have_attribute(
        "data-span", following
    )
    expect(page.locator("#detail article")).to_have_attribute("data-span", following)
    page.wait_for_url(f"**span={following}**")
    page.keyboard.press("ArrowRight")
    opened = page.locator(f'#tree li.node[data-span="{following}"]')
    expect(opened).to_have_attribute("aria-expanded", "true")
    expect(opened.locator("ul.children li.node").first).to_be_visible()

    # The timeline never holds more than 5,000 elements.
    assert page.locator("#timeline *").count() < 5000

    # A copied link opens the same view in a fresh page; back goes to the previous selection.
    copied = page.url
    state = (page.locator("#detail h2").inner_text(), window(page))
    shoot(page, "run-selected")
    other = page.context.new_page()
    other.goto(copied)
    expect(other.locator("#detail h2")).to_have_text(state[0])
    assert window(other) == pytest.approx(state[1])
    other.close()
    page.go_back()
    page.wait_for_url(f"**span={selected}**")
    expect(page.locator("#tree .row.selected a.select")).to_have_attribute("data-span", selected)


async def busy_run() -> None:
    """Four hundred quick tool calls, then a pause: at a page's width most calls are under a pixel."""
    tool = create_tool("tick", lambda i: i)

    async def handler(props: object) -> None:
        for i in range(400):
            await tool(i=i)
        await asyncio.sleep(0.05)

    await create_agent("ticker", handler)(None)


@pytest.fixture
def busy(tmp_path: Path, serve: ServerFactory) -> tuple[Server, str]:
    path = tmp_path / "busy.jsonl"

    def record() -> None:
        with JsonlSink(path) as sink:
            asyncio.run(run_with(busy_run, sinks=[sink]))

    with ThreadPoolExecutor(1) as pool:
        pool.submit(record).result()
    return serve(str(path)), json.loads(path.read_text().splitlines()[0])["trace"]["traceId"]


def test_a_merged_bar_says_what_it_holds_and_a_click_selects_its_first_span(
    page: Page, busy: tuple[Server, str]
) -> None:
    server, trace_id = busy
    open_run(page, f"{server.url}runs/{trace_id}")
    whole = window(page)
    # Calls too short to draw merge, per kind: a bar of tool calls says how many and which tool.
    # Bars too short to draw are drawn 4 px wide, over the next one's start; a later bar in the page
    # may lie over an earlier one's left edge, so the bar taken is one whose left edge is its own.
    uncovered = page.evaluate(
        """() => [...document.querySelectorAll('#bars rect.bar.merged')].findIndex((bar) => {
            const box = bar.getBoundingClientRect();
            return document.elementFromPoint(box.left + 1, box.top + 8) === bar;
        })"""
    )
    assert uncovered >= 0
    merged = page.locator("#bars rect.bar.merged").nth(uncovered)
    count = int(merged.get_attribute("data-count") or 0)
    assert count >= 2
    assert merged.get_attribute("data-kind") == "tools:execute"
    assert (merged.get_attribute("data-title") or "").startswith(f"{count} × tick (tools:execute)")
    start = float(merged.get_attribute("data-start") or 0)
    # A click selects, like on any bar: the first call it holds, zoomed in until the calls are apart.
    merged.click(position={"x": 1, "y": 8})
    zoomed = wait_for_window_change(page, whole)
    assert zoomed[1] - zoomed[0] < whole[1] - whole[0]
    expect(page.locator("#detail h2")).to_contain_text("tools tick")
    span = page.locator("#workspace").get_attribute("data-span")
    assert span
    assert f"span={span}" in page.url
    assert float(page.locator("#selection").get_attribute("data-start") or 0) == pytest.approx(start)
    expect(page.locator("#tree .row.selected")).to_contain_text("tick")
    # The link opened whole: the call is inside a merged bar again, and that bar is outlined.
    open_run(page, f"{server.url}runs/{trace_id}?span={span}")
    expect(page.locator("#bars rect.bar.merged.selected")).to_have_count(1)
    holder = page.locator("#bars rect.bar.merged.selected")
    assert float(holder.get_attribute("data-start") or 0) <= start <= float(holder.get_attribute("data-end") or 0)
    # Choosing another span in the tree moves the outline off it.
    page.locator("#tree a.select", has_text="ticker").first.click()
    expect(page.locator("#bars rect.bar.merged.selected")).to_have_count(0)
    expect(page.locator("#bars rect.bar.selected[data-span]")).to_have_count(1)

    # The overview strip pans a zoomed window.
    before = window(page)
    page.keyboard.press("]")
    zoomed_in = wait_for_window_change(page, before)
    overview = page.locator("#overview").bounding_box()
    assert overview is not None
    page.mouse.click(overview["x"] + overview["width"] * 0.9, overview["y"] + 10)
    moved = wait_for_window_change(page, zoomed_in)
    assert moved[0] > zoomed_in[0]


def test_search_finds_a_span_and_selects_it(page: Page, demo: tuple[Server, str]) -> None:
    server, trace_id = demo
    page.goto(f"{server.url}runs/{trace_id}")
    page.keyboard.press("/")
    page.keyboard.type("writer")
    hit = page.locator("#search-results a.select").first
    expect(hit).to_contain_text("writer")
    hit.click()
    expect(page.locator("#detail h2")).to_contain_text("agent writer")
    expect(page.locator("#tree .row.selected")).to_contain_text("writer")


def test_the_find_box_ranks_names_and_tools_first_and_takes_enter_and_arrows(
    page: Page, demo: tuple[Server, str]
) -> None:
    server, trace_id = demo
    page.goto(f"{server.url}runs/{trace_id}")
    page.keyboard.press("/")
    # Typed and Enter at once, before the hits came: the first of them opens when they do.
    page.keyboard.type("search")
    page.keyboard.press("Enter")
    expect(page.locator("#detail h2")).to_have_text("tools:execute tools web_search")
    hits = page.locator("#search-results a.select")
    # The tool calls named web_search before the agents whose names hold "search" inside a word.
    kinds = [hits.nth(i).locator(".kind").inner_text() for i in range(4)]
    assert kinds == ["tools:execute"] * 3 + ["agent"]
    first = page.locator("#workspace").get_attribute("data-span")
    # The box keeps its hits across the selection; ↓ chooses the next, Enter opens it.
    expect(page.locator("#span-search")).to_be_focused()
    page.keyboard.press("ArrowDown")
    expect(hits.nth(1)).to_have_class(re.compile(r"\bactive\b"))
    page.keyboard.press("Enter")
    page.wait_for_function("first => document.querySelector('#workspace').dataset.span !== first", arg=first)
    assert page.locator("#workspace").get_attribute("data-span") == hits.nth(1).get_attribute("data-span")
    expect(page.locator("#tree .row.selected .name")).to_have_text("web_search")
    page.keyboard.press("ArrowUp")
    expect(hits.nth(0)).to_have_class(re.compile(r"\bactive\b"))


def test_every_label_of_the_time_axis_is_whole(page: Page, serve: ServerFactory, tmp_path: Path) -> None:
    # A run of 613 ms: its last tick, +600 ms, sits a few pixels from the axis's right edge.
    trace = Trace()
    root = trace.start("agent", agentId="edge")
    trace.end(trace.start("tool", root, agentId="edge"), at=trace.now + 300)
    trace.end(root, at=trace.now + 312)
    server = serve(str(trace.write(tmp_path / "edge.trace.jsonl")))
    open_run(page, f"{server.url}runs/{trace.trace_id}")
    for width, height in SCREEN_SIZES:
        resize(page, width, height)
        axis = page.locator("#timeline svg.axis")
        expect(axis.locator("text").last).to_have_text("+600 ms")
        ends = axis.evaluate("svg => [...svg.querySelectorAll('text')].map(t => t.getBBox().x + t.getBBox().width)")
        assert max(ends) <= axis.evaluate("svg => svg.width.baseVal.value"), axis.evaluate("svg => svg.outerHTML")
