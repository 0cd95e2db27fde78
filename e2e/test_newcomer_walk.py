"""The second newcomer walk (issue 41), in a real Chromium over a real `devtool serve`: the upload that
acted twice, the live detail pane, the process page at 1024, the keyboard, the layout, a replay's cost."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect

from e2e.conftest import ServerFactory, Shoot
from tests.conftest import CORPUS


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
