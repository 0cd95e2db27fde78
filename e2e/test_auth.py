"""Sharing and safety in a real Chromium: a DevTool with a team token (login, links a teammate opens,
Copy link), and a loopback DevTool that a page on another origin cannot post to."""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from e2e.conftest import ServerFactory

TOKEN = "e2e-team-token-7f3a9c2d41b8"
TRACE = Path(__file__).resolve().parent.parent / "tests" / "corpus" / "rejelly" / "nested.trace.jsonl"


def trace_id() -> str:
    return str(json.loads(TRACE.read_text().splitlines()[0])["trace"]["traceId"])


def agent_span() -> str:
    for line in TRACE.read_text().splitlines():
        event = json.loads(line)
        if event["type"] == "agent:end":
            return str(event["trace"]["spanId"])
    raise AssertionError("no agent span in the trace")


def sign_in(page: Page, name: str) -> None:
    expect(page.locator("#login-title")).to_be_visible()
    page.locator("#login-token").fill(TOKEN)
    page.locator("#login-name").fill(name)
    page.locator("#login-submit").click()


def test_a_teammate_signs_in_rewinds_and_shares_a_link_that_holds_no_secret(
    page: Page, browser: Browser, serve: ServerFactory
) -> None:
    server = serve(str(TRACE), env={**os.environ, "DEVTOOL_TOKEN": TOKEN})
    run_page = f"{server.url}runs/{trace_id()}?span={agent_span()}"
    page.goto(run_page)
    page.locator("#login-token").fill("not the token")
    page.locator("#login-submit").click()
    expect(page.locator("#login-error")).to_contain_text("not this DevTool's team token")
    sign_in(page, "Ana")
    page.wait_for_url(run_page)
    page.locator("#rewind-after").click()
    page.wait_for_url("**/snapshots/*")
    expect(page.locator(".provenance .who")).to_have_text("Ana")

    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.locator(".snap-actions .copy-link").click()
    expect(page.locator(".snap-actions .copy-link")).to_have_text("Copied")
    link = page.evaluate("navigator.clipboard.readText()")
    assert link == page.url
    assert TOKEN not in link
    assert all(TOKEN not in cookie["value"] for cookie in page.context.cookies())

    # A teammate opens the link: the login page, then the snapshot.
    other = browser.new_context()
    try:
        teammate = other.new_page()
        teammate.goto(link)
        sign_in(teammate, "Bo")
        teammate.wait_for_url(link)
        expect(teammate.locator(".provenance .who")).to_have_text("Ana")
        expect(teammate.locator("#frames li.frame")).not_to_have_count(0)
        # Signing out ends the session: the same link asks for the token again.
        teammate.locator("#sign-out").click()
        expect(teammate.locator("#login-title")).to_be_visible()
        teammate.goto(link)
        expect(teammate.locator("#login-title")).to_be_visible()
    finally:
        other.close()


class _Attacker(http.server.BaseHTTPRequestHandler):
    """A page on another origin that posts to the DevTool as soon as it loads."""

    target = ""

    def page(self) -> str:
        return f"""<!doctype html><html><body>
<form id="f" method="post" action="{self.target}rewind">
  <input name="span_id" value="{agent_span()}"><input name="anchor" value="after">
</form>
<script>
  fetch("{self.target.split("/runs/")[0]}/api/v1/traces", {{method: "POST", mode: "no-cors",
        headers: {{"Content-Type": "text/plain"}}, body: "[]"}})
    .finally(() => document.getElementById("f").submit());
</script></body></html>"""

    def do_GET(self) -> None:
        body = self.page().encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


class _Framer(_Attacker):
    """A page on another origin that shows the DevTool in a see-through frame over a decoy button."""

    def page(self) -> str:
        return f"""<!doctype html><html><body><button>Win a prize</button>
<iframe src="{self.target}" width="900" height="600"></iframe></body></html>"""


@contextlib.contextmanager
def _other_origin(handler: type[_Attacker]) -> Iterator[tuple[type[_Attacker], str]]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield handler, f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


@pytest.fixture
def attacker() -> Iterator[tuple[type[_Attacker], str]]:
    with _other_origin(_Attacker) as served:
        yield served


@pytest.fixture
def framer() -> Iterator[tuple[type[_Attacker], str]]:
    with _other_origin(_Framer) as served:
        yield served


def test_a_page_on_another_origin_cannot_post_to_a_loopback_devtool(
    page: Page, serve: ServerFactory, attacker: tuple[type[_Attacker], str]
) -> None:
    server = serve(str(TRACE))
    handler, evil = attacker
    handler.target = f"{server.url}runs/{trace_id()}/"
    page.goto(evil)
    page.wait_for_url(f"{server.url}runs/{trace_id()}/rewind")
    expect(page.locator(".error-detail")).to_contain_text("must come from the DevTool's own pages")
    page.goto(f"{server.url}snapshots")
    expect(page.locator(".empty-state")).to_be_visible()
    # The DevTool's own page, same action: it works.
    page.goto(f"{server.url}runs/{trace_id()}?span={agent_span()}")
    page.locator("#rewind-after").click()
    page.wait_for_url("**/snapshots/*")
    expect(page.locator("#frames li.frame")).not_to_have_count(0)


def test_no_page_of_the_devtool_shows_in_a_frame_of_another_site(
    browser: Browser, serve: ServerFactory, framer: tuple[type[_Attacker], str]
) -> None:
    server = serve(str(TRACE))
    handler, evil = framer
    handler.target = f"{server.url}runs/{trace_id()}?span={agent_span()}"
    # Not the `page` fixture: it fails a test on any refusal of the policy, and this one is the point.
    page = browser.new_page()
    refusals: list[str] = []
    page.on("console", lambda message: refusals.append(message.text))
    page.goto(evil)
    expect(page.locator("button")).to_have_text("Win a prize")
    deadline = time.monotonic() + 10
    while not any("frame-ancestors" in text for text in refusals) and time.monotonic() < deadline:
        page.wait_for_timeout(100)
    assert any("frame-ancestors 'none'" in text for text in refusals), refusals
    framed = page.frames[1]
    assert framed.locator("#rewind-after").count() == 0  # nothing of the DevTool to click on
    assert not framed.url.startswith(server.url)
    page.close()
