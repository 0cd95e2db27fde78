"""Rewind, Replay, Fork and process rewind in a real Chromium over `devtool demo`.

The replays are real child processes the server starts (`python -m devtool run ...`), streaming
their runs back into it over HTTP; nothing is mocked but the model (the demo's ScriptedModel).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Locator, Page, expect

from e2e.conftest import SCREEN_SIZES, Server, Shoot, resize
from e2e.demo_server import running_demo

WRITER = "root/agent:research-lead:0/agent:writer:0"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, str]]:
    """`devtool demo`, and the trace id of its research run."""
    home = tmp_path_factory.mktemp("demo-home")
    with running_demo(home) as server:
        research = home / "devtool" / "demo-data" / "research.trace.jsonl"
        yield server, json.loads(research.read_text().splitlines()[0])["trace"]["traceId"]


def select_span(page: Page, kind: str, name: str) -> str:
    """Find a span with the search box and select it; its callId, as the detail panel shows it."""
    # A selection swaps the panes around the search box (which stays); wait for it to settle.
    expect(page.locator(".htmx-added, .htmx-settling, .htmx-swapping")).to_have_count(0)
    page.keyboard.press("/")
    page.locator("#span-search").fill(name)
    hit = page.locator("#search-results a.select").filter(has=page.locator(".kind", has_text=re.compile(f"^{kind}$")))
    hit = hit.filter(has=page.locator(".name", has_text=name)).first
    call_id = hit.locator(".call").inner_text()
    hit.click()
    expect(page.locator("#detail article .kind")).to_have_text(kind)
    return call_id


def replay(page: Page, shoot: Shoot | None = None) -> str:
    """From a snapshot page: confirm the replay (`shoot` its confirm page), follow it into its run, wait
    until it completes."""
    page.locator("#replay-button").click()
    expect(page.locator("#replay-entrypoint")).to_have_text("devtool.demo.research:main")
    expect(page.locator("#replay-argv")).to_contain_text("--snapshot=")
    # Every argument can be read where it is: a long one wraps rather than run past the block's edge.
    assert page.locator("#replay-argv").evaluate("node => node.scrollWidth - node.clientWidth") <= 1
    if shoot is not None:
        shoot(page, "replay-confirm")
    page.locator("#replay-run").click()
    page.wait_for_url(re.compile(r".*/runs/[0-9a-f]{32}$"), timeout=30_000)
    expect(page.locator("#run-header .status-badge")).to_have_text("completed", timeout=30_000)
    expect(page.locator("#replay-of")).to_be_visible()
    return page.url.rsplit("/", 1)[1]


def choose_mode(page: Page, mode: str) -> None:
    """Pick a rewind mode once the panel has settled: htmx readies a swapped-in form only after it
    settles, and a change made before that asks for nothing."""
    page.wait_for_function("() => !document.querySelector('.htmx-request, .htmx-settling, .htmx-swapping')")
    page.locator("#rewind-mode").select_option(mode)


def badges(row: Locator) -> tuple[int, int]:
    """Run B's calls in a frame of the compare page's tree: served from the journal, and run live (a
    count of none has no badge)."""
    served = row.locator(".served").first  # in a folded frame when nothing differs: read, not seen
    cached, live = (served.locator(f".badge.{name}").all_text_contents() or ["0"] for name in ("cached", "live"))
    return int(cached[0].split()[0]), int(live[0].split()[0])


def on_its_own_rows(page: Page, block: str, above: str, column: str) -> None:
    """At each screen size, `block` starts below the bottom of `above`, at the left edge of `column`: a
    block of its own, never squeezed beside it nor floating in the middle under it."""
    before = page.viewport_size
    for width, height in SCREEN_SIZES:
        resize(page, width, height)
        boxes = [page.locator(found).bounding_box() for found in (above, block, column)]
        upper, lower, left = (box for box in boxes if box is not None)
        assert lower["y"] >= upper["y"] + upper["height"], (width, upper, lower)
        assert abs(lower["x"] - left["x"]) <= 1, (width, left, lower)
    if before is not None:
        resize(page, before["width"], before["height"])


def test_rewind_before_a_tool_replay_with_earlier_calls_cached_and_compare(
    page: Page, demo: tuple[Server, str], shoot: Shoot
) -> None:
    server, trace_id = demo
    page.goto(f"{server.url}runs/{trace_id}")
    # A researcher's batch of two fetches (the find box puts an exact name first).
    call_id = select_span(page, "tools:execute", "fetch_page, fetch_page")
    # A batch of one tool call carries that call's callId; a batch of several, its agent's.
    agent = call_id.rsplit("/", 1)[0] if call_id.rsplit("/", 1)[-1].startswith("tool:") else call_id
    page.locator("#rewind-before").click()
    page.wait_for_url(re.compile(r".*/snapshots/[0-9a-f]{64}$"))
    snapshot_url = page.url
    expect(page.locator(".provenance .anchor")).to_have_text("before")
    # The cut is named by its span, not by a hex id.
    expect(page.locator("#snapshot-cut .cut-name")).to_have_text(
        re.compile(r"^tools fetch_page, fetch_page in researcher #\d$")
    )
    expect(page.locator("#snapshot-run")).to_have_attribute("href", re.compile(f"/runs/{trace_id}\\?span="))
    frame = page.locator(f'#frames li[data-call-id="{agent}"]')
    expect(frame.locator(".status-badge").first).to_have_text("running")
    shoot(page, "snapshot")

    # The same cut again is the same snapshot: same link.
    page.go_back()
    page.locator("#rewind-before").click()
    page.wait_for_url(snapshot_url)

    replay_id = replay(page, shoot)
    # Its actions count the calls that ran live by why: all of them after the cut, so only that is said,
    # once, by the line that opens their list; under the buttons, not beside them.
    ran_live = page.locator("#live-calls summary")
    expect(ran_live).to_have_text(re.compile(r"^\s*\d+ calls ran live after the cut\s*$"))
    assert (page.locator("#run-actions").text_content() or "").count("after the cut") == 1
    on_its_own_rows(page, "#live-calls", "#run-actions .run-actions-bar", "#run-header")
    shoot(page, "replay-ran-live")
    # On the replay's run: the agent's web search (before the cut) came from the journal, the fetch
    # it was rewound to before ran live.
    select_span(page, "tools:execute", "web_search")
    expect(page.locator("#detail header .badge.cached")).to_be_visible()
    # Calls served from the journal take no time; each is still drawn wide enough to see and click.
    cached = page.locator("#bars rect.bar.cached")
    expect(cached.first).to_be_visible()
    assert min(float(w) for w in cached.evaluate_all("bars => bars.map(b => b.getAttribute('width'))")) >= 4
    select_span(page, "tools:execute", "fetch_page")
    expect(page.locator("#detail header .badge.cached")).to_have_count(0)

    page.locator("#compare-original").click()
    page.wait_for_url(f"**/compare?a={trace_id}&b={replay_id}")
    expect(page.locator("#compare-summary")).to_contain_text("The runs are the same")
    cached, live = badges(page.locator(f'li[data-call-id="{agent}"]'))
    assert cached >= 3  # its first turn, its search and its second turn
    assert live >= 3  # the fetches and the turn after them
    # A count of none is no badge: the writer, after the cut, ran its one call live and was served none.
    counts = page.locator("#compare-tree .served .badge").all_text_contents()
    assert counts
    assert [count for count in counts if count.startswith("0 ")] == []
    assert badges(page.locator(f'li[data-call-id="{WRITER}"]')) == (0, 1)
    on_its_own_rows(page, "#live-calls", "#compare-summary", "#compare-summary")
    shoot(page, "compare")


def test_fork_by_editing_memory_replay_and_compare_opens_on_the_first_divergence(
    page: Page, demo: tuple[Server, str], shoot: Shoot
) -> None:
    server, trace_id = demo
    page.goto(f"{server.url}runs/{trace_id}")
    select_span(page, "agent", "writer")
    page.locator("#rewind-after").click()
    page.wait_for_url(re.compile(r".*/snapshots/[0-9a-f]{64}$"))
    parent = page.url.rsplit("/", 1)[1]

    frame = page.locator(f'#frames li[data-call-id="{WRITER}"]')
    if frame.locator("details.frame-box").get_attribute("open") is None:
        frame.locator("details.frame-box > summary").click()
    frame.locator(".memory-edit > summary").click()
    editor = frame.locator("textarea.json-editor")
    expect(editor).to_contain_text('"style": "brief"')
    editor.fill('{"style": "detailed", "findings": }')
    expect(frame.locator(".json-error")).not_to_be_empty()
    expect(page.locator("#save-fork")).to_be_disabled()
    editor.fill('{"style": "detailed", "findings": 3}')
    expect(frame.locator(".json-error")).to_be_empty()
    page.locator("#save-fork").click()
    page.wait_for_url(re.compile(r".*/snapshots/[0-9a-f]{64}$"))
    assert not page.url.endswith(parent)
    expect(page.locator(".fork-badge")).to_be_visible()
    expect(page.locator("#snapshot-parent")).to_have_attribute("href", f"/snapshots/{parent}")
    expect(page.locator(".snap-metadata")).to_contain_text("fork")

    expect(page.locator(".fork-label")).to_have_text("fork: memory of writer #0")

    fork_run = replay(page)
    expect(page.locator("#replay-of .badge.lineage")).to_have_text("fork: memory of writer #0")
    page.locator("#compare-original").click()
    page.wait_for_url(f"**/compare?a={trace_id}&b={fork_run}")
    # It opens on the first divergence: the writer's model turn, asked for another style, with its
    # words marked; everything that changed after it is listed downstream.
    title = page.locator("#divergence-title")
    expect(title).to_have_text(re.compile(r"^First divergence: turn #\d+ in writer #0$"))
    first = page.locator("#first-divergence .field-diff").first
    expect(first.locator(".word-diff ins").first).to_be_visible()
    expect(first.locator(".word-diff")).to_contain_text("detailed")
    expect(page.locator("#downstream")).to_contain_text("writer #0")
    expect(page.locator("#downstream")).to_contain_text("research-lead #0")
    # The path to the difference is open in the tree, the difference marked.
    writer = page.locator(f'li[data-call-id="{WRITER}"]')
    expect(writer.locator("> input.cmp-open")).to_be_checked()
    expect(writer.locator(".badge.first-divergence")).to_be_visible()
    expect(page.locator('li[data-call-id="root/agent:research-lead:0"] > input.cmp-open')).to_be_checked()
    shoot(page, "compare-fork")
    # The writer's answer, chosen from the tree: the fork's says "In detail", the original's not.
    writer.locator("> a.cmp-call").click()
    answer = page.locator('#first-divergence .field-diff[data-field="output"] .word-diff')
    expect(answer.locator("ins")).to_contain_text("detail")

    # The runs list: the fork listed under its original, named by what it changed; a short id opens it.
    page.goto(server.url)
    row = page.locator(f'tr.run-row[data-trace-id="{fork_run}"]')
    expect(row).to_have_class(re.compile(r"\brun-child\b"))
    expect(row.locator(".badge.lineage")).to_have_text("fork: memory of writer #0")
    shoot(page, "runs-with-replays")
    page.goto(f"{server.url}runs/{fork_run[:12]}")
    page.wait_for_url(f"**/runs/{fork_run}")
    expect(page.locator("#run-header h1")).to_be_visible()
    # "Compare…" on the original offers its fork first, by name.
    page.goto(f"{server.url}runs/{trace_id}")
    page.locator("#compare-button").click()
    expect(page.locator("#compare-pick select option").first).to_have_text(re.compile(r"^fork: memory of writer #0 · "))
    shoot(page, "compare-pick")


def test_billing_ops_rewind_at_the_account_hold(
    page: Page, demo: tuple[Server, str], screenshot_path: Callable[[str], Path]
) -> None:
    server, _ = demo
    page.goto(f"{server.url}processes/billing-ops")
    page.locator(".mark[title*=apply_account_hold]").first.click()
    expect(page.locator(".pdetail-type")).to_have_text("tool_call")
    expect(page.locator("#plan-affected")).to_have_text("3")
    expect(page.locator(".lane .mark.t-rewind, .mark.t-rewind")).to_have_count(0)
    # The plan lists what it reaches; changing the mode says what that mode does to each entry.
    plan = page.locator("#plan-entries tr.plan-row")
    expect(plan).to_have_count(3)  # the hold, its context update, the process's stop
    expect(plan.first).to_contain_text("apply_account_hold")
    choose_mode(page, "conversation_only")
    expect(page.locator("#plan-entries th").last).to_have_text("conversation only")
    expect(plan.locator(".fate")).to_have_text(["kept", "kept", "kept"])
    choose_mode(page, "code_only")
    expect(plan.locator(".fate")).to_have_text(["taken back", "taken back", "taken back"])
    # Apply names the journal file it will append to and asks first; Cancel writes nothing.
    page.locator("#rewind-apply").click()
    question = page.locator("#rewind-confirm-question")
    expect(question).to_contain_text("billing-ops.jsonl")
    expect(question).to_contain_text("code only")
    page.locator("#rewind-confirm-cancel").click()
    expect(page.locator("#rewind-confirm")).to_have_count(0)
    expect(page.locator("#rewind-mode")).to_have_value("code_only")
    page.locator("#rewind-apply").click()
    page.locator("#rewind-confirm-yes").click()
    page.wait_for_url(re.compile(r".*/processes/billing-ops\?entry=rewind-[0-9a-f]+"))
    expect(page.locator(".pdetail-type")).to_have_text("rewind")
    expect(page.locator(".mark.t-rewind")).to_have_count(1)
    expect(page.locator(".rewind-did")).to_contain_text("code_only")
    state = page.locator("#rewound-state")
    expect(state).to_contain_text("delinquent")
    expect(state).not_to_contain_text("account_hold_applied")
    expect(page.locator("#rewind-where")).to_contain_text("Recorded in the process's journal")
    # The rewind came minutes (or days) after the incident: that quiet stretch is cut out of the
    # axis, so the incident's 200 ms still spread across the chart instead of sitting in one pixel.
    expect(page.locator(".pchart-cut")).to_contain_text("without entries cut out")
    xs = [float(x) for x in page.locator(".lane-context .mark").evaluate_all("ms => ms.map(m => m.dataset.x)")]
    assert max(xs) - min(xs) > 50  # percent of the chart's width
    page.screenshot(path=screenshot_path("process-rewind"), full_page=True)
