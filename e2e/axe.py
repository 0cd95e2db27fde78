"""axe-core (the npm package `scripts/ensure_node.py` installs) run on the page a browser test has open.

The script is evaluated through the DevTools protocol, which the page's Content-Security-Policy does
not apply to (an injected `<script>` tag would be refused, as it should be); nothing of the page changes.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from playwright.sync_api import Page

AXE = Path(__file__).resolve().parent.parent / "testkit" / "rejelly" / "node_modules" / "axe-core" / "axe.min.js"
SEVERE = ("serious", "critical")

_RUN = """async (severe) => {
  const found = await axe.run(document, { resultTypes: ["violations"] });
  return found.violations.filter((v) => severe.includes(v.impact)).map((v) =>
    `${v.impact} ${v.id}: ${v.help}\\n` +
    v.nodes.slice(0, 5).map((n) => `    ${n.target.join(" ")}: ${n.failureSummary}`).join("\\n"));
}"""


@cache
def _source() -> str:
    assert AXE.exists(), f"{AXE} is missing: run `make node` (scripts/ensure_node.py installs axe-core)"
    return AXE.read_text()


def severe_violations(page: Page) -> list[str]:
    """axe-core's serious and critical violations on `page` as it is now, one text each (empty: none)."""
    if not page.evaluate("() => typeof axe !== 'undefined'"):
        page.evaluate(_source() + "\n;0")
    found: list[str] = page.evaluate(_RUN, list(SEVERE))
    return found
