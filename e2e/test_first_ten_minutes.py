"""What a new user trips over in the first ten minutes (issue 19), walked again in a real Chromium over
`devtool demo`: parallel work on the timeline, counts that agree, the pages at 1024×768, the upload
retry, the process table, the panes and the snapshot's memory."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import ConsoleMessage, Page, expect

from e2e.conftest import Server, ServerFactory, Shoot
from e2e.demo_server import demo_traces, running_demo
from tests.conftest import CORPUS, Trace


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, dict[str, str]]]:
    """`devtool demo`, and its runs' trace ids by file (`research`, `release-check`)."""
    home = tmp_path_factory.mktemp("demo-home")
    with running_demo(home) as server:
        yield server, demo_traces(home)


def open_run(page: Page, demo: tuple[Server, dict[str, str]], name: str) -> None:
    """The run page of demo run `name` in a 1600×1000 window."""
    server, traces = demo
    page.set_viewport_size({"width": 1600, "height": 1000})
    page.goto(f"{server.url}runs/{traces[name]}")


def test_parallel_researchers_get_lanes_and_every_bar_is_in_the_tree(
    page: Page, demo: tuple[Server, dict[str, str]]
) -> None:
    open_run(page, demo, "research")
    researchers = page.locator('#bars rect.bar.k-agent[data-span][data-title^="agent researcher"]')
    expect(researchers).to_have_count(3)
    lanes = {researchers.nth(i).get_attribute("y") for i in range(3)}
    assert len(lanes) == 3  # three lanes, not one bar and a "2 spans" bar
    # A merged bar (if any at this width) holds one kind; no bar is of a kind the tree looks through.
    kinds = page.locator("#bars rect.bar").evaluate_all("bars => bars.map(b => b.dataset.kind)")
    assert not {"promptAgent", "model:call"} & set(kinds)
    # Any bar selects a row of the tree: here a researcher's turn.
    page.locator('#bars rect.bar.k-turn[data-span][data-title^="turn turn 1"]').first.click()
    expect(page.locator("#detail h2")).to_contain_text("turn 1")
    expect(page.locator("#tree .row.selected")).to_have_count(1)
    expect(page.locator("#tree .row.selected .name")).to_have_text("turn 1")
    # The three researchers read apart in the tree: their call index and their topic.
    twins = page.locator("#tree .row", has=page.locator(".name", has_text=re.compile("^researcher$")))
    expect(twins.locator(".call-index")).to_have_text(["#0", "#1", "#2"])
    expect(twins.locator(".props").first).to_contain_text('topic="rust"')


def test_the_counts_agree_on_the_runs_page_the_header_and_the_timeline(
    page: Page, demo: tuple[Server, dict[str, str]]
) -> None:
    server, traces = demo
    page.set_viewport_size({"width": 1600, "height": 1000})
    page.goto(server.url)
    note = page.locator(f'tr[data-trace-id="{traces["release-check"]}"] .run-note').inner_text()
    page.goto(f"{server.url}runs/{traces['release-check']}")
    failed = int(page.locator(".run-facts .failed dd").inner_text())
    spans = int(page.locator(".run-facts dt", has_text=re.compile("^spans$")).locator("xpath=../dd").inner_text())
    assert note == f"{failed} failed spans"
    assert spans == int(page.locator("#timeline").get_attribute("data-spans") or 0)
    # The demo's own log, loading the file, said the same number.
    logged = re.search(r"release-check\.trace\.jsonl: \d+ events, (\d+) spans", server.output())
    assert logged is not None, server.output()
    assert int(logged.group(1)) == spans
    expect(page.locator("#bars rect.bar.merged.s-failed")).to_have_count(0)
    expect(page.locator("#bars rect.bar.s-failed[data-span]")).to_have_count(failed)


def test_every_page_is_usable_at_1024_by_768(page: Page, demo: tuple[Server, dict[str, str]]) -> None:
    server, traces = demo
    page.set_viewport_size({"width": 1024, "height": 768})
    page.goto(server.url)
    results = page.locator("#runs-results")
    overflow = results.evaluate("node => node.scrollWidth - node.clientWidth")
    assert overflow <= 1  # the table fits
    heights = page.locator(".run-title").evaluate_all("titles => titles.map(t => t.getBoundingClientRect().height)")
    assert max(heights) < 45  # two lines at most: names break at words, never a letter a line
    # A link with a span deep in the tree opens at the page's top, the span shown inside the tree pane.
    page.goto(f"{server.url}runs/{traces['research']}")
    page.locator('#bars rect.bar.k-turn[data-span][data-title^="turn turn 2"]').last.click()
    expect(page.locator("#tree .row.selected")).to_have_count(1)
    link = page.url
    page.goto(link)
    expect(page.locator("#tree .row.selected")).to_be_visible()
    assert page.evaluate("() => window.scrollY") == 0
    expect(page.locator("h1")).to_be_in_viewport()
    row = page.locator("#tree .row.selected").bounding_box()
    pane = page.locator(".tree-pane").bounding_box()
    assert row is not None
    assert pane is not None
    assert pane["y"] <= row["y"]
    assert row["y"] + row["height"] <= pane["y"] + pane["height"]


def test_the_panes_fill_the_window_and_a_stack_is_not_a_box_of_its_own(
    page: Page, demo: tuple[Server, dict[str, str]]
) -> None:
    open_run(page, demo, "release-check")
    page.locator("#tree a.select", has_text="release-checker").first.click()
    expect(page.locator("#detail h2")).to_contain_text("release-checker")
    detail = page.locator("#detail").bounding_box()
    assert detail is not None
    assert 1000 - 30 <= detail["y"] + detail["height"] <= 1000  # down to the window's bottom
    stack = page.locator("#detail pre.stack")
    if stack.count():
        assert stack.first.evaluate("node => getComputedStyle(node).maxHeight") == "none"


def test_a_snapshot_cut_inside_a_generation_says_why_memory_is_empty_and_what_came_later(
    page: Page, demo: tuple[Server, dict[str, str]]
) -> None:
    server, traces = demo
    page.goto(f"{server.url}runs/{traces['research']}")
    page.locator('#bars rect.bar.k-turn[data-span][data-title^="turn turn 0"]').nth(1).click()
    expect(page.locator("#detail h2")).to_contain_text("turn 0")
    page.locator("#rewind-before").click()
    page.wait_for_url(re.compile(r".*/snapshots/[0-9a-f]{64}$"))
    frame = page.locator("#frames li.frame", has=page.locator(".frame-agent", has_text=re.compile("^researcher$")))
    frame.locator("details.frame-box > summary").first.click()
    expect(frame.locator(".memory-origin")).to_contain_text("none of its generations had ended at the cut")
    expect(frame.locator(".memory-later")).to_contain_text("topic")
    expect(frame.locator(".memory-later h5")).to_contain_text("not in this snapshot")
    # A frame's header shows that it opens and closes.
    marker = frame.locator("details.frame-box > summary").first.evaluate(
        "node => getComputedStyle(node, '::before').content"
    )
    assert marker in ('"▾"', '"▸"')


def test_the_process_table_row_selects_its_entry(page: Page, demo: tuple[Server, dict[str, str]]) -> None:
    server, _ = demo
    page.goto(f"{server.url}processes/billing-ops")
    row = page.locator("#entries tr.entry-row").nth(6)
    entry_id = row.get_attribute("data-entry-id")
    row.scroll_into_view_if_needed()
    cell = row.locator("td.entry-summary").bounding_box()  # not the type's link: anywhere on the row
    assert cell is not None
    page.mouse.click(cell["x"] + cell["width"] / 2, cell["y"] + cell["height"] / 2)
    page.wait_for_url(f"**entry={entry_id}")
    expect(page.locator(f'#entries tr.selected[data-entry-id="{entry_id}"]')).to_be_visible()


def test_enter_in_the_runs_search_during_a_search_logs_no_error(
    page: Page, demo: tuple[Server, dict[str, str]]
) -> None:
    server, _ = demo
    errors: list[str] = []
    page.on("console", lambda message: _note_error(message, errors))
    page.goto(server.url)
    search = page.locator("#runs-q")
    search.click()
    page.keyboard.type("res")
    page.keyboard.press("Enter")  # a search and a submit at once, and the typing's own one after
    page.keyboard.type("e")
    page.keyboard.press("Enter")
    page.wait_for_url("**/?q=rese")
    expect(page.locator("#runs-results tr.run-row")).to_have_count(2)
    page.wait_for_timeout(400)
    assert errors == []


def _note_error(message: ConsoleMessage, errors: list[str]) -> None:
    if message.type == "error":
        errors.append(message.text)


def test_a_refused_upload_keeps_its_file_for_loading_the_good_lines(
    page: Page, serve: ServerFactory, tmp_path: Path, shoot: Shoot
) -> None:
    server = serve()
    page.goto(server.url)
    lines = (CORPUS / "rejelly" / "nested.trace.jsonl").read_text().splitlines()
    bad = tmp_path / "half-bad.jsonl"
    bad.write_text("\n".join([lines[0], "this is not json", *lines[1:]]) + "\n")
    page.locator("#upload-file").set_input_files(str(bad))
    message = page.locator(".upload-file.upload-failed .upload-message")
    expect(message).to_contain_text("line 2, column 1: not JSON: “this is not json”")
    expect(message).not_to_contain_text("expected")
    expect(page.locator("#upload-chosen")).to_have_text("chosen: half-bad.jsonl")
    shoot(page, "upload-refused")
    # Tick the box and press Load: the same file goes again, its good lines load.
    page.locator("input[name=bad_lines]").check()
    page.locator(".upload-submit").click()
    expect(page.locator(".upload-file.upload-loaded .upload-message")).to_contain_text("1 bad line skipped")
    expect(page.locator("#upload-chosen")).to_have_text("")
    shoot(page, "upload-loaded")
    # Or the outcome's own button, for a file refused for its bad lines.
    trace = Trace()
    trace.end(trace.start("agent", agentId="retried"))
    other = trace.write(tmp_path / "other-bad.jsonl")
    other.write_text(other.read_text() + "[1]\n")
    page.locator("input[name=bad_lines]").uncheck()
    page.locator("#upload-file").set_input_files(str(other))
    retry = page.locator(".upload-file.upload-failed button.upload-retry")
    expect(retry).to_have_text("Load its good lines")
    retry.click()
    expect(page.locator(".upload-file.upload-loaded .upload-message")).to_contain_text("1 bad line skipped")
