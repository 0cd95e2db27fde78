"""DNS rebinding in a real Chromium: a page whose own name resolves to 127.0.0.1 fetches the DevTool
as same-origin with no referrer (no browser header names where it came from), and reads nothing.

Chromium is told `evil.example` is 127.0.0.1 (`--host-resolver-rules`, as a rebinding DNS server
would answer); the attacker's page itself is served by the test (Playwright's routing) at the
DevTool's own port, so the page and the DevTool share an origin, as after a rebinding."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserType, Route

from e2e.conftest import CHROMIUM_ARGS, DEBIAN_CHROMIUM, ServerFactory

TRACE = Path(__file__).resolve().parent.parent / "tests" / "corpus" / "rejelly" / "nested.trace.jsonl"
REBOUND = "evil.example"


@pytest.fixture
def rebinding_browser(browser_type: BrowserType) -> Iterator[Browser]:
    # Chromium's own guard against public pages reaching local addresses is turned off: browsers
    # without it (or a rebinding that beats it) are what the DevTool must hold against by itself.
    guards = "PrivateNetworkAccessSendPreflights,BlockInsecurePrivateNetworkRequests,LocalNetworkAccessChecks"
    args = [*CHROMIUM_ARGS, f"--host-resolver-rules=MAP {REBOUND} 127.0.0.1", f"--disable-features={guards}"]
    options: dict[str, object] = {"args": args}
    if DEBIAN_CHROMIUM.exists():
        options["executable_path"] = str(DEBIAN_CHROMIUM)
    browser = browser_type.launch(**options)  # type: ignore[arg-type]
    yield browser
    browser.close()


def test_a_rebound_page_reads_no_export(rebinding_browser: Browser, serve: ServerFactory) -> None:
    server = serve(str(TRACE))
    trace_id = json.loads(TRACE.read_text().splitlines()[0])["trace"]["traceId"]
    port = server.url.rstrip("/").rsplit(":", 1)[1]
    origin = f"http://{REBOUND}:{port}"
    attack = f"""<!doctype html><html><body><pre id="out">waiting</pre><script>
fetch("/runs/{trace_id}/export.otlp.jsonl", {{referrerPolicy: "no-referrer", credentials: "omit"}})
  .then(async (r) => {{ document.getElementById("out").textContent = r.status + " " + (await r.text()); }})
  .catch((e) => {{ document.getElementById("out").textContent = "error " + e; }});
</script></body></html>"""
    page = rebinding_browser.new_page()

    def attacker_page(route: Route) -> None:
        route.fulfill(status=200, content_type="text/html", body=attack)

    page.route(f"{origin}/attack", attacker_page)  # only the page: its fetch goes to 127.0.0.1
    page.goto(f"{origin}/attack")
    page.wait_for_function("document.getElementById('out').textContent !== 'waiting'")
    read = page.locator("#out").text_content() or ""
    assert read.startswith("421 "), read[:300]
    assert "resourceSpans" not in read  # nothing of the export
    # The DevTool by its own address, in the same browser: the export is there.
    own = rebinding_browser.new_page()
    response = own.request.get(f"{server.url}runs/{trace_id}/export.otlp.jsonl")
    assert response.status == 200
    assert "resourceSpans" in response.text()
