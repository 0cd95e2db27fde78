"""Agents on a real model API, in the DevTool: a real `devtool serve`, a real agent process on the
official `openai` SDK, the fake provider as the model (a real process on a loopback port), Chromium.

A streamed turn's answer grows on the live run page before the turn ends; a run's cost is the sum of
its turns priced from the price table, shown as money, and a model with no price shows "—".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, expect

from devtool.core.providers.pricing import load_price_table
from devtool.web.filters import usd
from e2e.conftest import Server, ServerFactory
from testkit.checkout import child_env
from testkit.fake_provider import FakeProvider, FakeProviderProcess

KEY = "sk-e2e-live-models-5a4b3c2d1e0f"
AGENT = textwrap.dedent(
    """
    from devtool.core import create_agent, create_tool, prompt

    CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}

    async def main(props):
        weather = create_tool("weather", lambda city: f"{city}: 21°C and sunny", parameters=CITY)

        async def plan(p):
            return await prompt(f"Plan a slow day in {p['city']}, hour by hour.", tools=[weather])

        return await create_agent("planner", plan, model=props["model"])(props)
    """
)
ANSWER = (
    "08:00 coffee and a pastel de nata in Belém. 09:30 the cloister of the Jerónimos monastery. "
    "11:00 tram 28 up through the Alfama. 13:00 grilled sardines by the river. 15:00 the castle walls. "
    "17:30 the miradouro at sunset. 20:00 dinner in the Bairro Alto."
)
USAGE = ({"input": 1000, "output": 50}, {"input": 1500, "cached": 500, "output": 400})


def script(fake: FakeProvider, city: str, *, chunk_delay: float = 0.0) -> None:
    fake.reply(
        {"tool_calls": [{"name": "weather", "arguments": {"city": city}}], "usage": USAGE[0]},
        {"text": ANSWER, "usage": USAGE[1], "chunk_size": 6, "chunk_delay": chunk_delay},
        contains=f"Plan a slow day in {city}",
    )


def start_agent(tmp_path: Path, fake: FakeProvider, server: Server, props: dict[str, Any]) -> subprocess.Popen[str]:
    (tmp_path / "day_planner.py").write_text(AGENT)
    env = child_env({**os.environ, **fake.env(api_key=KEY), "XDG_DATA_HOME": str(tmp_path / "agent-data")})
    args = [sys.executable, "-m", "devtool", "run", "day_planner:main", "--props", json.dumps(props)]
    args += ["--to", server.url, "--trace", str(tmp_path / f"{props['city']}.jsonl")]
    return subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(agent: subprocess.Popen[str]) -> None:
    out, err = agent.communicate(timeout=60)
    assert agent.returncode == 0, err
    assert json.loads(out) == ANSWER


def test_a_streamed_turn_shows_its_partial_answer_on_the_live_run_page_before_it_ends(
    page: Page,
    serve: ServerFactory,
    tmp_path: Path,
    fake_provider: FakeProvider,
    fake_provider_process: FakeProviderProcess,
    screenshot_path: Callable[[str], Path],
) -> None:
    # ~40 chunks: about ten seconds of answering, the time the page has to open the run and its turn (at
    # five seconds, a loaded CI machine opened it once after the answer had ended).
    script(fake_provider, "Lisbon", chunk_delay=0.25)
    server = serve()
    page.goto(server.url)
    agent = start_agent(tmp_path, fake_provider, server, {"city": "Lisbon", "model": "openai:gpt-4.1-mini"})
    try:
        row = page.locator("tr.run-row")
        expect(row.locator(".live-badge")).to_have_text("live", timeout=20_000)
        row.locator("a.run-link").click()
        streaming = page.locator("#tree .row a.select", has_text="turn 1")
        expect(streaming).to_be_visible(timeout=20_000)
        streaming.click()
        partial = page.locator("#turn-answer .content.partial")
        expect(partial).to_contain_text("08:00 coffee", timeout=15_000)
        first = partial.inner_text()
        expect(page.locator("#detail-status")).to_have_text("running")
        assert ANSWER.startswith(first)
        assert len(first) < len(ANSWER)
        page.screenshot(path=screenshot_path("live-streamed-turn"), full_page=True)
        # It grows while the model answers, without a reload, then the whole message replaces it.
        page.evaluate("window.streamMarker = 'not reloaded'")
        page.wait_for_function(
            "n => (document.querySelector('#turn-answer .content.partial')?.textContent.length ?? 1e9) > n",
            arg=len(first),
            timeout=15_000,
        )
        whole = page.locator("#turn-answer .content")
        expect(whole).to_have_text(ANSWER, timeout=30_000)
        expect(page.locator("#turn-answer .content.partial")).to_have_count(0)
        expect(page.locator("#detail-status")).to_have_text("completed")
        assert page.evaluate("window.streamMarker") == "not reloaded"
        finish(agent)
    finally:
        agent.kill()
    # The key reached the provider and nowhere else: not the events, not the DevTool, not the page.
    for where, text in {
        "the agent's trace": (tmp_path / "Lisbon.jsonl").read_text(),
        "the DevTool's log": server.output(),
        "the provider's log": fake_provider_process.log_text(),
        "the page": page.content(),
    }.items():
        assert KEY not in text, where


def test_a_runs_cost_is_its_turns_priced_from_the_table_and_no_price_shows_a_dash(
    page: Page,
    serve: ServerFactory,
    tmp_path: Path,
    fake_provider: FakeProvider,
    screenshot_path: Callable[[str], Path],
) -> None:
    server = serve()
    script(fake_provider, "Porto")
    finish(start_agent(tmp_path, fake_provider, server, {"city": "Porto", "model": "openai:gpt-4.1-mini"}))
    script(fake_provider, "Braga")
    finish(start_agent(tmp_path, fake_provider, server, {"city": "Braga", "model": "openai:llama3.2:3b"}))
    price = load_price_table().price("openai", "gpt-4.1-mini")
    assert price is not None
    turns: list[Any] = [
        {
            "promptTokens": used["input"],
            "completionTokens": used["output"],
            "totalTokens": used["input"] + used["output"],
            "details": {"cacheReadTokens": used.get("cached", 0)},
        }
        for used in USAGE
    ]
    total = sum(price.micro_usd(turn) for turn in turns)
    events = [json.loads(line) for line in (tmp_path / "Porto.jsonl").read_text().splitlines()]
    recorded = [e["costs"]["micro_usd"] for e in events if e["type"] == "model:call:end"]
    assert recorded == [price.micro_usd(turn) for turn in turns]

    page.goto(server.url)
    rows = page.locator("tr.run-row")
    expect(rows).to_have_count(2)
    assert sorted(rows.locator(".run-cost").all_inner_texts()) == sorted([usd(total), "—"])
    page.screenshot(path=screenshot_path("runs-costs"), full_page=True)
    rows.filter(has=page.locator(".run-cost", has_text="$")).locator("a.run-link").click()
    expect(page.locator("#run-header .run-cost")).to_have_text(usd(total))
    # Rolled up: the agent's detail asks for the cost of the model calls under it.
    page.locator("#tree .row a.select", has_text="planner").click()
    expect(page.locator("#detail dd.cost")).to_have_text(usd(total))
    expect(page.locator("#detail dd.tokens")).to_have_text("2,950 (2,500 in, 450 out · 2 model calls)")
    page.screenshot(path=screenshot_path("run-agent-cost"), full_page=True)
    page.locator("#tree .row a.select", has_text="turn 0").click()
    expect(page.locator("#detail dd.cost")).to_have_text(usd(recorded[0]))
    page.goto(server.url)
    rows.filter(has=page.locator(".run-cost", has_text="—")).locator("a.run-link").click()
    expect(page.locator("#run-header .run-cost")).to_have_text("—")
