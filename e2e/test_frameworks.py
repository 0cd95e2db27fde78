"""A framework agent recorded with `devtool.instrument.install()` and no decorator, rewound and replayed
from a real Chromium: a Pydantic AI agent with a sync `main()` (`run_sync`), recorded into a real
`devtool serve` whose replays run in its project folder, against the fake provider. The replay runs
the tool rewound to once, serves the request before it, and compares equal with the original."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from e2e.conftest import REPO, Shoot
from e2e.test_rewind import select_span
from testkit import served
from testkit.fake_provider import FakeProvider
from tests.framework_agents import ANSWER, script

TRIP = '''
import os

import devtool
import devtool.instrument
from devtool.core import replayable
from pydantic_ai import Agent

devtool.instrument.install()


def weather(city: str) -> str:
    """The weather in a city."""
    with open("tool_runs.txt", "a") as runs:
        runs.write(city + "\\n")
    return f"{city}: sunny"


agent = Agent("openai:gpt-4.1-mini", name="travel", instructions="You plan trips.", tools=[weather])


@replayable
@devtool.record("trip", to=os.environ.get("TRIP_TO", "trip.jsonl"))
def main():
    return agent.run_sync("Plan a day in Lisbon").output


if __name__ == "__main__":
    print(main())
'''


@pytest.fixture
def project(tmp_path: Path, fake_provider: FakeProvider) -> Iterator[tuple[served.Served, Path]]:
    """A project folder holding `trip.py`, and a `devtool serve` started in it (its replays run there)."""
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "trip.py").write_text(TRIP)
    script(fake_provider)
    env = {**os.environ, **fake_provider.env(api_key="sk-e2e-frameworks-000000"), "PYTHONPATH": str(REPO)}
    server = served.start(tmp_path / "s.duckdb", log=tmp_path / "serve.log", env=env, cwd=folder)
    try:
        yield server, folder
    finally:
        server.stop()


def test_a_framework_agent_rewound_before_its_tool_replays_it_once_and_compares_equal(
    page: Page, project: tuple[served.Served, Path], fake_provider: FakeProvider, shoot: Shoot
) -> None:
    server, folder = project
    env = {**os.environ, **fake_provider.env(api_key="sk-e2e-frameworks-000000"), "TRIP_TO": server.url}
    done = subprocess.run(
        [sys.executable, "trip.py"], cwd=folder, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ANSWER + "\n"
    assert fake_provider.count() == 2

    page.goto(server.url)
    page.locator("a", has_text="travel").first.click()  # the runs list names a run by its first agent
    page.wait_for_url(re.compile(r".*/runs/[0-9a-f]{32}$"))
    # The framework's agent is a frame of the run, by its own name, with its tool call inside.
    expect(page.locator("#tree .row .name", has_text=re.compile("^travel$")).first).to_be_visible()
    call_id = select_span(page, "tools:execute", "weather")
    assert call_id == "root/agent:travel:0/tool:weather:0"
    expect(page.locator("#detail")).to_contain_text("Lisbon")
    shoot(page, "framework-run")

    page.locator("#rewind-before").click()
    page.wait_for_url(re.compile(r".*/snapshots/[0-9a-f]{64}$"))
    page.locator("#replay-button").click()
    expect(page.locator("#replay-entrypoint")).to_have_text("trip:main")
    page.locator("#replay-run").click()
    page.wait_for_url(re.compile(r".*/runs/[0-9a-f]{32}$"), timeout=60_000)
    expect(page.locator("#run-header .status-badge")).to_have_text("completed", timeout=60_000)
    # The tool rewound to ran once more, and only the request after it was made.
    assert (folder / "tool_runs.txt").read_text() == "Lisbon\nLisbon\n"
    assert fake_provider.count() == 3

    page.locator("#compare-original").click()
    page.wait_for_url(re.compile(r".*/compare\?a=.*"))
    expect(page.locator("#compare-summary")).to_contain_text("The runs are the same")
    shoot(page, "framework-compare")
