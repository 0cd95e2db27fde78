"""The second newcomer walk (issue 41), in a real Chromium over a real `devtool serve`: the upload that
acted twice, the live detail pane, the process page at 1024, the keyboard, the layout, a replay's cost."""

from __future__ import annotations

import itertools
import json
import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from e2e.conftest import Server, ServerFactory, Shoot, resize
from e2e.demo_server import running_demo
from e2e.test_rewind import choose_mode, replay
from tests.conftest import CORPUS, Trace


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """`devtool demo`, as a newcomer starts it."""
    with running_demo(tmp_path_factory.mktemp("demo-home")) as server:
        yield server


def post(url: str, events: list[dict[str, Any]]) -> None:
    """Events sent to the DevTool at `url` as a running agent sends them (`POST /api/v1/traces`)."""
    request = urllib.request.Request(
        f"{url}api/v1/traces", data=json.dumps(events).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 200


def test_load_after_a_chosen_file_uploaded_opens_the_picker_and_keeps_the_outcome(
    page: Page, serve: ServerFactory, tmp_path: Path, shoot: Shoot
) -> None:
    server = serve()
    page.goto(server.url)
    page.locator("#upload-file").set_input_files(str(CORPUS / "rejelly" / "nested.trace.jsonl"))
    loaded = page.locator(".upload-file.upload-loaded .upload-message")
    expect(loaded).to_contain_text("loaded")
    # The file went when it was chosen: Load now asks for another file, and the ✓ stays.
    with page.expect_file_chooser() as chooser:
        page.locator(".upload-submit").click()
    assert chooser.value is not None
    expect(loaded).to_contain_text("loaded")
    expect(page.locator(".upload-error")).to_have_count(0)
    # A plain-text file has no good line: it is not offered "Load its good lines".
    text = tmp_path / "notes.txt"
    text.write_text("some notes\nnot a trace at all\n")
    page.locator("#upload-file").set_input_files(str(text))
    failed = page.locator(".upload-file.upload-failed .upload-message")
    expect(failed).to_contain_text("2 bad lines, nothing stored: line 1, column 1: not JSON")
    expect(page.locator("button.upload-retry")).to_have_count(0)
    shoot(page, "upload-plain-text")


def test_the_detail_of_a_running_span_shows_its_end_when_it_ends(page: Page, serve: ServerFactory) -> None:
    server = serve()
    trace = Trace()
    root = trace.start("agent", agentId="walker")
    turn = trace.start("turn", root, agentId="walker")
    post(server.url, trace.events)
    page.set_viewport_size({"width": 1600, "height": 1000})
    page.goto(f"{server.url}runs/{trace.trace_id}?span={turn}")
    status = page.locator("#detail-status")
    expect(status).to_have_text("running")
    expect(page.locator("#rewind-after")).to_be_disabled()
    sent = len(trace.events)
    trace.end(turn, message={"role": "assistant", "content": "done"})
    trace.end(root)
    post(server.url, trace.events[sent:])
    # No reload: the pane follows the span to its end.
    expect(status).to_have_text("completed", timeout=15_000)
    expect(page.locator("#rewind-after")).to_be_enabled()
    duration = page.locator(".detail .facts div", has=page.locator("dt", has_text="duration")).locator("dd")
    expect(duration).to_have_text("1.0 ms")
    expect(page.locator("#run-header .status-badge")).to_have_text("completed")


def test_the_process_page_at_1024_by_768(page: Page, demo: Server, shoot: Shoot) -> None:
    page.set_viewport_size({"width": 1024, "height": 768})
    page.goto(f"{demo.url}processes/billing-ops")
    # The incident handled, the process stopped: it does not read as running.
    expect(page.locator("span.status").first).to_have_text("completed")
    # A clicked row's detail is where it can be seen: beside the table, in the window.
    page.locator("#entries tr.entry-row a.entry-link").nth(5).click()
    page.wait_for_url(re.compile(r".*\?entry=.+"))
    title = page.locator("#entry-detail .pdetail-type")
    expect(title).to_have_text("context_update")
    box = title.bounding_box()
    assert box is not None
    assert box["y"] >= 0, box
    assert box["y"] + box["height"] <= 768, box
    # The keyboard moves the selection and the focus with it.
    page.keyboard.press("ArrowDown")
    expect(title).to_have_text("trigger_event")
    expect(page.locator("#entries tr.selected a.entry-link")).to_be_focused()
    # Every time is whole in its column.
    cut = page.locator("#entries td.entry-time").evaluate_all(
        "cells => cells.filter(c => c.scrollWidth > c.clientWidth).length"
    )
    assert cut == 0
    # The invocation's spans have their kind's colours, as on the run page.
    page.locator(".inv-toggle").click()
    page.wait_for_url("**open=*")
    colours = page.locator(".pspans a.span-bar").evaluate_all(
        "bars => bars.map(b => [b.className.match(/k-[\\w-]+/)[0], getComputedStyle(b).backgroundColor])"
    )
    by_kind = dict(colours)
    assert len(set(by_kind.values())) == len(by_kind) >= 3, by_kind
    shoot(page, "process-open")
    # A rewind: its entry's "before → after" is what "State the rewind left" says.
    page.locator(".mark[title*=apply_account_hold]").first.click()
    expect(page.locator(".pdetail-type")).to_have_text("tool_call")
    choose_mode(page, "code_only")
    page.locator("#rewind-apply").click()
    page.locator("#rewind-confirm-yes").click()
    page.wait_for_url(re.compile(r".*\?entry=rewind-[0-9a-f]+"))
    expect(page.locator("#rewound-state")).not_to_contain_text("account_hold_applied")
    expect(page.locator("span.status").first).to_have_text("running")  # the rewind took the stop back too
    context = page.locator(".state-block h4", has_text="Context")
    expect(context).not_to_contain_text("0 changes")
    expect(page.locator(".context-diff tr.change-removed")).to_contain_text("action")
    left = page.locator("#rewound-state").inner_text()
    for after in page.locator(".context-diff tr:not(.change-removed) td:nth-child(3)").all_inner_texts():
        assert after.strip() in left
    # The axis labels across the cut-out quiet stretch do not run into each other.
    resize(page, 1024, 768)
    ticks = page.locator(".paxis .ptick").evaluate_all(
        "ticks => ticks.map(t => { const r = t.getBoundingClientRect(); return [r.left, r.right]; })"
    )
    assert all(right + 4 <= left_ for (_, right), (left_, _) in itertools.pairwise(ticks)), ticks
    shoot(page, "process-rewound")


def open_demo_run(page: Page, demo: Server, name: str) -> None:
    """The run page of the demo's run `name` (from the runs list)."""
    page.goto(demo.url)
    page.locator("tr.run-row", has_text=name).first.locator("a[href^='/runs/']").first.click()
    page.wait_for_url("**/runs/*")


def test_the_arrow_keys_move_the_focus_with_the_selection(page: Page, demo: Server) -> None:
    page.set_viewport_size({"width": 1600, "height": 1000})
    open_demo_run(page, demo, "release-checker")
    page.locator("#tree .row a.select").first.click()
    expect(page.locator("#tree .row.selected a.select")).to_be_focused()
    for _ in range(3):
        page.keyboard.press("ArrowDown")
    selected = page.locator("#tree .row.selected a.select")
    expect(selected).to_have_text(page.locator("#tree .row a.select").nth(3).inner_text())
    expect(selected).to_be_focused()
    # Tab goes on from the selection, not from the top of the page.
    page.keyboard.press("Tab")
    inside = page.evaluate("() => !!document.activeElement.closest('#selection')")
    assert inside, page.evaluate("() => document.activeElement.outerHTML")
    outline = page.evaluate("() => getComputedStyle(document.activeElement).outlineStyle")
    assert outline != "none"


def test_the_runs_table_and_the_tree_fit_at_1024_and_use_1600(page: Page, demo: Server, shoot: Shoot) -> None:
    page.set_viewport_size({"width": 1024, "height": 768})
    page.goto(demo.url)
    box = page.locator("#runs-results")
    assert box.evaluate("b => b.scrollWidth <= b.clientWidth")
    cut = page.locator(".source-name").evaluate_all("cells => cells.filter(c => c.scrollWidth > c.clientWidth).length")
    assert cut == 0
    # How to start a live run, said on the page: the lines to copy, for this very DevTool.
    page.locator("#live-hint summary").click()
    url = demo.url.rstrip("/")
    expect(page.locator("#live-hint-run")).to_have_text(f"devtool run devtool.demo.research:main --to {url}")
    expect(page.locator("#live-hint-record")).to_have_text(f"with devtool.record('my-agent', to='{url}'):")
    expect(page.locator("#live-hint-otlp")).to_have_text(f"export OTEL_EXPORTER_OTLP_ENDPOINT={url}")
    shoot(page, "runs-live-hint")
    open_demo_run(page, demo, "research-lead")
    for width, height in ((1024, 768), (1600, 1000)):
        resize(page, width, height)
        pane = page.locator(".tree-pane")
        assert pane.evaluate("p => p.scrollWidth <= p.clientWidth"), width
        right = pane.evaluate("p => p.getBoundingClientRect().left + p.clientWidth")
        ends = page.locator("#tree .dur").evaluate_all("ds => ds.map(d => d.getBoundingClientRect().right)")
        assert ends
        assert max(ends) <= right, (width, max(ends), right)
        if width == 1600:  # room enough: no name is cut short
            names = page.locator("#tree .name").evaluate_all(
                "ns => ns.filter(n => n.scrollWidth > n.clientWidth).length"
            )
            assert names == 0
    shoot(page, "run-tree")


def test_a_fully_cached_replay_cost_nothing_and_says_what_it_saved(page: Page, demo: Server, shoot: Shoot) -> None:
    page.set_viewport_size({"width": 1600, "height": 1000})
    open_demo_run(page, demo, "research-lead")
    recorded = page.locator("#run-header .run-cost").inner_text()
    assert recorded.startswith("$0.000")  # the demo's priced model calls
    page.locator("#tree .row a.select").first.click()  # the whole run: every call is in its journal
    expect(page.locator("#rewind-after")).to_be_enabled()
    page.locator("#rewind-after").click()
    page.wait_for_url("**/snapshots/*")
    replay(page)
    expect(page.locator("#run-header .run-cost")).to_have_text("$0.00")
    saving = page.locator("#run-header #replay-saving")
    said = re.compile(rf"^\d+ calls served from the snapshot \(saved {re.escape(recorded)}\)$")
    expect(saving).to_have_text(said)
    expect(page.locator("#compare-original")).to_be_visible()  # the run's actions
    expect(page.locator("#live-calls")).to_have_count(0)  # no call ran live: no "Ran live: 0 … · 0 …"
    # Said once a page: the header tells how many calls were served, the actions only what ran live.
    assert served_counts(page) == 1
    shoot(page, "replay-saving")
    page.locator("#compare-original").click()
    page.wait_for_url(re.compile(r".*/compare\?a=.*"))
    expect(page.locator("#compare-served #replay-saving")).to_have_text(said)
    expect(page.locator("#live-calls")).to_have_count(0)
    assert served_counts(page) == 1
    shoot(page, "compare-saving")


def served_counts(page: Page) -> int:
    """How many times the page's text says how many calls a snapshot served, however it words it."""
    counted: int = page.evaluate(
        "() => (document.body.innerText.match(/\\d+ calls? served from|served \\d+ calls? from/g) || []).length"
    )
    return counted
