"""Real OpenTelemetry clients exporting to a real `devtool serve`: the run shows up live and after.

Each client runs as its own process with only `OTEL_EXPORTER_OTLP_ENDPOINT` set (`e2e/otel_agents.py`),
and the tests read what a user reads: the runs stream while the agent runs, then the run's page.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from selectolax.lexbor import LexborHTMLParser

from e2e.conftest import Server, ServerFactory, Shoot
from testkit.checkout import child_env
from testkit.fake_provider import FakeProvider
from testkit.sse import SseStream

REPO = Path(__file__).resolve().parent.parent


def agent(server: Server, which: str, **more: str) -> subprocess.Popen[str]:
    env = child_env({**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": server.url.rstrip("/"), **more})
    return subprocess.Popen(
        [sys.executable, "-m", "e2e.otel_agents", which],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def finished(process: subprocess.Popen[str], answer: str | None = None) -> str:
    out, err = process.communicate(answer, timeout=60)
    assert process.returncode == 0, err
    return out.strip().rsplit("\n", 1)[-1]


def page_text(server: Server, path: str) -> LexborHTMLParser:
    with urllib.request.urlopen(server.url.rstrip("/") + path, timeout=10) as answer:
        return LexborHTMLParser(answer.read().decode())


def span_id(server: Server, trace_id: str, name: str) -> str:
    tree = page_text(server, f"/runs/{trace_id}/tree")
    link = next(a for a in tree.css("a.select") if name in a.text())
    return str(link.attributes["data-span"])


def test_the_sdk_exporter_shows_a_run_live_then_whole(serve: ServerFactory) -> None:
    server = serve()
    runs = SseStream(f"{server.url}live/runs")
    try:
        process = agent(server, "sdk")
        assert process.stdout is not None
        trace_id = process.stdout.readline().strip()
        # Its root is still open: the chat and the tool it already exported are on the stream.
        named = next(m for m in runs.messages() if m.event == "runs" and trace_id in m.json()["traces"])
        assert named is not None
        finished(process, "\n")  # now it ends its root span
    finally:
        runs.close()
    page = page_text(server, f"/runs/{trace_id}")
    assert page.css_first("h1").text() == "planner"
    assert page.css_first("#otel-badge") is not None
    tool = page_text(server, f"/runs/{trace_id}?span={span_id(server, trace_id, 'book_train')}")
    detail = tool.css_first("article.detail").text()
    assert "book_train" in detail
    assert "Lyon" in detail
    assert "no seats left" in detail


def test_an_otlp_json_body_shows_the_same_run(serve: ServerFactory) -> None:
    server = serve()
    trace_id = finished(agent(server, "json"))
    chat = page_text(server, f"/runs/{trace_id}?span={span_id(server, trace_id, 'chat gpt-4.1-mini')}")
    detail = chat.css_first("article.detail")
    assert [m.text().strip() for m in detail.css("li.message .role")] == ["user"]
    assert "Plan a trip to Lyon" in detail.text()
    assert "book_train" in detail.css_first("section.answer").text()


def test_a_pydantic_ai_agent_on_the_run_page(serve: ServerFactory, page: Page) -> None:
    server = serve()
    trace_id = finished(agent(server, "pydantic"))
    page.goto(f"{server.url}runs/{trace_id}")
    expect(page.locator("h1")).to_have_text("travel_agent")
    expect(page.locator("#no-journal")).to_have_count(0)  # nothing is selected yet
    page.locator(".tree a.select", has_text="find_train").first.click()
    detail = page.locator("article.detail")
    expect(detail).to_contain_text("find_train")
    expect(detail.locator("table.tool-results")).to_contain_text("the 9:04 to")
    expect(page.locator("#no-journal")).to_contain_text("rewind and replay are unavailable")
    page.locator(".tree a.select", has_text="chat test").first.click()
    expect(detail.locator("li.message.role-system")).to_contain_text("Book trains.")
    expect(detail.locator("li.message.role-user")).to_contain_text("Find me a train to Lyon")
    facts = detail.locator("dl.facts")
    expect(facts).to_contain_text(re.compile(r"tokens\s*[1-9][0-9]*\s*\([0-9]+ in, [0-9]+ out · 1 model call\)"))


def test_the_openai_sdk_under_openinference_on_the_run_page(
    serve: ServerFactory, fake_provider: FakeProvider, page: Page, shoot: Shoot
) -> None:
    fake_provider.reply(
        {"tool_calls": [{"name": "lookup_order", "arguments": {"order": 7}}], "usage": {"input": 120, "output": 15}},
        {"text": "Order 7 shipped yesterday.", "usage": {"input": 180, "output": 9}},
    )
    server = serve()
    trace_id = finished(agent(server, "openinference", **fake_provider.env()))
    assert fake_provider.count() == 2
    page.goto(f"{server.url}runs/{trace_id}")
    expect(page.locator("h1")).to_have_text("support")
    # Tokens as the run's total: both model requests, read from OpenInference's token counts.
    expect(page.locator("#run-header")).to_contain_text(re.compile(r"tokens\s*324"))
    page.locator(".tree a.select", has_text="ChatCompletion").first.click()
    detail = page.locator("article.detail")
    expect(detail.locator("li.message.role-system")).to_contain_text("You answer order questions.")
    expect(detail.locator("li.message.role-user")).to_contain_text("Where is order 7?")
    expect(detail.locator("section.answer")).to_contain_text("lookup_order")
    shoot(page, "otel-run")
    page.locator(".tree a.select", has_text="lookup_order").first.click()
    expect(detail.locator("table.tool-results")).to_contain_text("shipped yesterday")


@pytest.mark.parametrize(
    "conventions",
    [
        # v1.30's: each message an event, sent by the SDK as a log record (POST /v1/logs)
        {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"},
        # the latest: messages on the span itself
        {
            "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "span_only",
        },
        # the latest, messages in one operation-details event (a log record)
        {
            "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "event_only",
        },
    ],
    ids=["v1.30-events-as-logs", "latest-opt-in", "latest-opt-in-event-only"],
)
def test_the_openai_sdk_under_the_opentelemetry_instrumentation_on_the_run_page(
    serve: ServerFactory, fake_provider: FakeProvider, page: Page, conventions: dict[str, str]
) -> None:
    fake_provider.reply(
        {"tool_calls": [{"name": "lookup_order", "arguments": {"order": 7}}], "usage": {"input": 120, "output": 15}},
        {"text": "Order 7 shipped yesterday.", "usage": {"input": 180, "output": 9}},
    )
    server = serve()
    trace_id = finished(agent(server, "genai", **fake_provider.env(), **conventions))
    assert fake_provider.count() == 2
    page.goto(f"{server.url}runs/{trace_id}")
    expect(page.locator("h1")).to_have_text("support")
    expect(page.locator("#run-header")).to_contain_text(re.compile(r"tokens\s*324"))
    turns = page.locator(".tree a.select", has_text="chat gpt-4o-mini")
    expect(turns).to_have_count(2)
    detail = page.locator("article.detail")
    turns.first.click()
    expect(detail.locator("li.message.role-system")).to_contain_text("You answer order questions.")
    expect(detail.locator("li.message.role-user")).to_contain_text("Where is order 7?")
    expect(detail.locator("section.answer")).to_contain_text("lookup_order")
    turns.last.click()
    expect(detail.locator("li.message.role-tool")).to_contain_text("shipped yesterday")
    expect(detail.locator("section.answer")).to_contain_text("Order 7 shipped yesterday.")
    page.locator(".tree a.select", has_text="lookup_order").first.click()
    expect(detail.locator("table.tool-results")).to_contain_text("shipped yesterday")
