"""The runs page in a real Chromium against a real `devtool serve` / `devtool demo`."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from e2e.conftest import Server, ServerFactory, Shoot
from e2e.demo_server import running_demo
from tests.conftest import CORPUS, Trace


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with running_demo(tmp_path_factory.mktemp("demo-home")) as server:
        yield server


def names(page: Page) -> list[str]:
    return page.locator("#runs-results tr.run-row .run-title").all_inner_texts()


def test_empty_store_says_how_to_load_a_trace(
    page: Page, serve: ServerFactory, screenshot_path: Callable[[str], Path]
) -> None:
    server = serve()
    page.goto(server.url)
    expect(page).to_have_title("Runs · DevTool")
    expect(page.locator(".empty-state")).to_contain_text("No runs yet: load a trace with")
    # htmx loaded from the vendored copy: the page is wired for fragments.
    assert page.evaluate("typeof window.htmx") == "object"
    assert page.evaluate("window.htmx.version").startswith("2.0.")
    page.screenshot(path=screenshot_path("runs-empty"), full_page=True)


def test_the_demo_search_filter_reload_and_history(page: Page, demo: Server, shoot: Shoot) -> None:
    page.goto(demo.url)
    rows = page.locator("#runs-results tr.run-row")
    expect(rows).to_have_count(5)
    assert sorted(names(page)) == ["billing-ops", "reconciler", "release-checker", "research-lead", "research-lead"]
    expect(page.locator('tr[data-kind="journal"] .status')).to_have_text("completed")  # handled, it stopped
    shoot(page, "runs")

    page.locator("#runs-q").fill("reconcil")
    page.wait_for_url("**/?q=reconcil")
    expect(rows).to_have_count(2)
    assert sorted(names(page)) == ["billing-ops", "reconciler"]

    page.locator("#runs-q").fill("")
    page.wait_for_url(demo.url)
    page.locator(".seg-failed").click()
    page.wait_for_url("**/?status=failed")
    expect(rows).to_have_count(1)
    assert names(page) == ["release-checker"]
    expect(page.locator('tr[data-kind="trace"] .status')).to_have_text("failed")

    # A reload (or the link copied from the address bar) shows the same list and the same filter.
    page.reload()
    expect(rows).to_have_count(1)
    expect(page.locator('input[name="status"][value="failed"]')).to_be_checked()

    page.go_back()
    page.wait_for_url(demo.url)
    expect(rows).to_have_count(5)
    expect(page.locator('input[name="status"][value=""]')).to_be_checked()
    page.go_back()
    page.wait_for_url("**/?q=reconcil")
    expect(rows).to_have_count(2)
    expect(page.locator("#runs-q")).to_have_value("reconcil")
    page.go_forward()
    page.wait_for_url(demo.url)
    expect(rows).to_have_count(5)
    expect(page.locator("#runs-q")).to_have_value("")


def test_a_row_opens_its_run_or_process(page: Page, demo: Server) -> None:
    page.goto(demo.url)
    page.locator('tr[data-kind="journal"]').click()
    page.wait_for_url("**/processes/billing-ops")
    expect(page.locator("h1")).to_have_text("billing-ops")
    page.go_back()
    page.locator('tr[data-kind="trace"]', has_text="release-checker").click()
    page.wait_for_url("**/runs/*")
    expect(page.locator("h1")).to_have_text("release-checker")


def test_upload_by_choosing_and_by_dropping_files(page: Page, serve: ServerFactory, tmp_path: Path) -> None:
    server = serve()
    page.goto(server.url)
    trace = Trace()
    root = trace.start("agent", agentId="uploaded-agent")
    trace.end(trace.start("turn", root, step=0))
    trace.end(root)
    path = trace.write(tmp_path / "chosen.trace.jsonl")

    # Choosing a file sends it at once; the table gains the run without a reload.
    page.locator("#upload-file").set_input_files(str(path))
    expect(page.locator(".upload-file.upload-loaded .upload-message")).to_have_text("loaded 4 events, 2 spans, 1 run")
    expect(page.locator(f'tr[data-trace-id="{trace.trace_id}"] .run-title')).to_have_text("uploaded-agent")

    # Dropping files anywhere on the page: a journal and a file that is not a trace.
    journal = (CORPUS / "promptise" / "billing-ops.journal.jsonl").read_text()
    drop = page.evaluate_handle(
        """([journal]) => {
            const data = new DataTransfer();
            data.items.add(new File([journal], "billing.journal.jsonl", {type: "application/x-ndjson"}));
            data.items.add(new File(["not json\\n"], "notes.txt", {type: "text/plain"}));
            return data;
        }""",
        [journal],
    )
    page.dispatch_event("body", "dragenter", {"dataTransfer": drop})
    expect(page.locator("body")).to_have_class("dragging-file")
    page.dispatch_event("body", "drop", {"dataTransfer": drop})
    outcomes = page.locator("#upload-result .upload-file")
    expect(outcomes).to_have_count(2)
    expect(outcomes.nth(0)).to_contain_text("billing.journal.jsonl: loaded 10 journal entries")
    expect(outcomes.nth(1)).to_contain_text("notes.txt: 1 bad line, nothing stored: line 1, column 1: not JSON")
    expect(page.locator('tr[data-process-id="billing-ops"]')).to_have_count(1)
    expect(page.locator("body")).not_to_have_class("dragging-file")


def test_a_file_over_the_limit_is_refused_before_it_is_sent(page: Page, serve: ServerFactory) -> None:
    server = serve()
    page.goto(server.url)
    page.evaluate("document.getElementById('upload-form').dataset.maxBytes = '10'")
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url) if request.method == "POST" else None)
    page.locator("#upload-file").set_input_files(
        files=[{"name": "big.jsonl", "mimeType": "application/x-ndjson", "buffer": b"x" * 100}]
    )
    expect(page.locator("#upload-result .upload-error")).to_contain_text("big.jsonl")
    expect(page.locator("#upload-result .upload-error")).to_contain_text("over the upload limit of")
    assert requests == []
