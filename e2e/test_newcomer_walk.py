"""The second newcomer walk (issue 41), in a real Chromium over a real `devtool serve`: the upload that
acted twice, the live detail pane, the process page at 1024, the keyboard, the layout, a replay's cost."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, expect

from e2e.conftest import ServerFactory, Shoot
from tests.conftest import CORPUS, Trace


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
