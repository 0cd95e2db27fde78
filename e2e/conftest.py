"""Browser tests: a real `python -m devtool serve` process and a real Chromium.

Playwright cannot download its own browser here, so when Debian's /usr/bin/chromium exists
(`make test` installs it as root) Playwright is pointed at it. The server's stdout/stderr are
attached to the report of a test that fails.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import ConsoleMessage, Page

from testkit import served
from testkit.postgres import Lakes, cluster
from testkit.served import Served

REPO = Path(__file__).resolve().parent.parent
# pytest-playwright owns test-results/ (it empties it each session): screenshots go beside it.
ARTIFACTS = REPO / "test-artifacts"
DEBIAN_CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    args = {**browser_type_launch_args, "args": CHROMIUM_ARGS}
    if DEBIAN_CHROMIUM.exists():
        args["executable_path"] = str(DEBIAN_CHROMIUM)
    return args


@pytest.fixture(scope="session")
def lakes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lakes]:
    """A real PostgreSQL cluster for the session (`testkit/postgres.py`): a database per lake test."""
    with cluster() as made:
        yield Lakes(made, tmp_path_factory.mktemp("lake-data"))


@pytest.fixture
def page(page: Page) -> Iterator[Page]:
    """Every browser test's page, failing the test when the browser refused something under the
    DevTool's Content-Security-Policy (an inline style or script, a `data:` URL): the pages must
    work under the policy, not around it."""
    refused: list[str] = []
    page.on("console", lambda message: _note_refusal(message, refused))
    yield page
    assert refused == [], "the Content-Security-Policy refused:\n" + "\n".join(refused)


def _note_refusal(message: ConsoleMessage, refused: list[str]) -> None:
    if message.type == "error" and "Content Security Policy" in message.text:
        refused.append(message.text)


# A running `devtool serve` child process.
Server = Served
ServerFactory = Callable[..., Server]


@pytest.fixture
def serve(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[ServerFactory]:
    """Start `devtool serve [ARGS]` on a free port; returns once it answers HTTP."""
    started: list[Server] = []

    def start(*args: str, db: Path | None = None, env: dict[str, str] | None = None) -> Server:
        db = db or tmp_path / f"serve{len(started)}.duckdb"
        server = served.start(db, *args, log=tmp_path / f"serve{len(started)}.log", env=env)
        started.append(server)
        return server

    yield start

    for server in started:
        server.stop()
        rest = server.process.stdout.read() if server.process.stdout else ""
        with server.log.open("a") as handle:
            handle.write(rest)
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        for index, server in enumerate(started):
            print(f"\n--- devtool serve #{index} ({server.url}) output ---\n{server.output()}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.when == "call":
        item.rep_call = report  # type: ignore[attr-defined]
    return report


@pytest.fixture
def screenshot_path(request: pytest.FixtureRequest) -> Callable[[str], Path]:
    """Where a test saves a screenshot it wants a person to look at: test-artifacts/screenshots/."""

    def path(name: str) -> Path:
        folder = ARTIFACTS / "screenshots"
        folder.mkdir(parents=True, exist_ok=True)
        return folder / f"{name}.png"

    return path


def resize(page: Page, width: int, height: int) -> None:
    """The window at `width`×`height`, once the page has redrawn for it."""
    page.set_viewport_size({"width": width, "height": height})
    # The run page redraws its timeline for a new width (after a 250 ms pause): let it.
    page.wait_for_timeout(400)
    page.wait_for_function("() => !document.querySelector('.htmx-request, .htmx-settling, .htmx-swapping')")


# The window sizes every page must work at: a small laptop and a desktop.
SCREEN_SIZES = ((1024, 768), (1600, 1000))
Shoot = Callable[[Page, str], None]


@pytest.fixture
def shoot(screenshot_path: Callable[[str], Path]) -> Shoot:
    """Screenshots of the page as it is, at each of `SCREEN_SIZES` (`<name>-<w>x<h>.png`), whole pages;
    the page is left at the size it had."""

    def take(page: Page, name: str) -> None:
        before = page.viewport_size
        for width, height in SCREEN_SIZES:
            resize(page, width, height)
            page.screenshot(path=screenshot_path(f"{name}-{width}x{height}"), full_page=True)
        if before is not None:
            page.set_viewport_size(before)

    return take
