"""Change the past, in a browser: a real `devtool serve` whose models are the fake provider (its
OPENAI_BASE_URL and key in the server's environment), and Chromium.

From a recorded turn's span, the fork editor saves a fork with an edited answer; the playground opens
the turn, sends its edited messages (one provider request), streams the answer in beside the recorded
one, and saves the variant as a fork whose page offers Replay. An OpenTelemetry chat span (a run with
no journal) opens in the playground too, and is asked again the same way.
"""

from __future__ import annotations

import asyncio
import json
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from playwright.sync_api import Page, expect

from devtool.core import JsonlSink, ScriptedModel, create_agent, prompt, run_with
from e2e.conftest import ServerFactory, Shoot
from testkit.fake_provider import FakeProvider

KEY = "sk-e2e-playground-0123456789"
OTEL_TRACE = "7" * 32
OTEL_CHAT = "c" * 16
ANSWER = "Porto: walk the Ribeira, then a slow lunch by the river and port at a cellar in Gaia."


def recorded_run(path: Path) -> tuple[str, str]:
    """A run with one `prompt()` turn written to `path`: (its trace id, the turn's span id)."""
    model = ScriptedModel(lambda messages: "Lisbon: tram 28, then pastéis de nata.")
    system = {"role": "system", "content": "You plan city days."}
    agent = create_agent("planner", lambda p: prompt([system, {"role": "user", "content": "Plan Lisbon"}], model=model))
    # Playwright's sync API runs an event loop in this thread: the agent runs in a thread of its own.
    with JsonlSink(path) as sink, ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, run_with(agent, sinks=[sink])).result()
    events = [json.loads(line) for line in path.read_text().splitlines()]
    (turn,) = [e for e in events if e["type"] == "turn:start"]
    return turn["trace"]["traceId"], turn["trace"]["spanId"]


def otel_chat() -> bytes:
    """An OTLP/JSON export of one GenAI chat span that carries its messages (and no journal)."""
    messages = [{"role": "user", "parts": [{"type": "text", "content": "Plan a day in Madrid"}]}]
    answer = [{"role": "assistant", "parts": [{"type": "text", "content": "Prado, then tapas."}]}]
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4.1-mini",
        "gen_ai.input.messages": json.dumps(messages),
        "gen_ai.output.messages": json.dumps(answer),
        "gen_ai.usage.input_tokens": 9,
        "gen_ai.usage.output_tokens": 4,
    }
    span = {
        "traceId": OTEL_TRACE,
        "spanId": OTEL_CHAT,
        "name": "chat gpt-4.1-mini",
        "kind": 3,
        "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": "1700000000900000000",
        "attributes": [
            {"key": k, "value": {"intValue": str(v)} if isinstance(v, int) else {"stringValue": v}}
            for k, v in attributes.items()
        ],
    }
    body = {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {"name": "e2e"}, "spans": [span]}]}]}
    return json.dumps(body).encode()


def test_change_the_past_from_a_span_and_in_the_playground(
    page: Page, serve: ServerFactory, tmp_path: Path, fake_provider: FakeProvider, shoot: Shoot
) -> None:
    trace_id, turn = recorded_run(tmp_path / "planner.jsonl")
    server = serve(str(tmp_path / "planner.jsonl"), env=fake_provider.env(api_key=KEY))
    base = server.url.rstrip("/")
    exported = urllib.request.Request(
        f"{base}/v1/traces", data=otel_chat(), headers={"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(exported, timeout=10) as answer:
        assert answer.status == 200

    # The fork editor, on the turn's span: the answer edited, saved as a fork that offers Replay.
    page.goto(f"{base}/runs/{trace_id}?span={turn}")
    editor = page.locator("#fork-editor")
    editor.locator("summary").click()
    expect(page.locator("#fork-output")).to_have_value("Lisbon: tram 28, then pastéis de nata.")
    page.locator("#fork-output").fill("Lisbon: stay in and read.")
    shoot(page, "h40-fork-editor")
    page.locator("#fork-output-save").click()
    expect(page.locator("#replay-button")).to_be_visible()
    expect(page.locator(".snap-metadata")).to_contain_text("Lisbon: stay in and read.")

    # The playground: the turn's messages edited, asked once, streamed beside the recorded answer.
    page.goto(f"{base}/runs/{trace_id}?span={turn}")
    page.locator("#open-playground").click()
    expect(page.locator("#pg-recorded")).to_contain_text("tram 28")
    messages = json.loads(page.locator("#pg-messages").input_value())
    messages[1]["content"] = "Plan Porto"
    page.locator("#pg-messages").fill(json.dumps(messages, indent=2))
    expect(page.locator("#pg-model")).to_have_value("")  # a scripted model: the user names a real one
    page.locator("#pg-model").fill("openai:gpt-4.1-mini")
    fake_provider.reply({"text": ANSWER, "usage": {"input": 20, "output": 18}, "chunk_size": 5, "chunk_delay": 0.05})
    page.locator("#pg-run").click()
    expect(page.locator("#pg-run-0 .answering")).to_be_visible()  # the answer streams in
    expect(page.locator("#pg-run-0 .pg-diff")).to_contain_text("slow lunch by the river", timeout=15_000)
    expect(page.locator("#pg-run-0 .pg-diff ins").first).to_be_visible()  # what differs from the recorded one
    expect(page.locator("#pg-run-0 .tokens")).to_contain_text("38")
    assert fake_provider.count() == 1
    (sent,) = fake_provider.requests()
    assert sent["body"]["messages"][1]["content"] == "Plan Porto"
    shoot(page, "h40-playground")
    page.locator("#pg-save-0").click()
    expect(page.locator("#replay-button")).to_be_visible()
    expect(page.locator(".snap-metadata")).to_contain_text("slow lunch by the river")

    # An OpenTelemetry chat span, from a run with no journal: opened and asked again the same way.
    page.goto(f"{base}/runs/{OTEL_TRACE}/spans/{OTEL_CHAT}/playground")
    expect(page.locator("#pg-recorded")).to_contain_text("Prado, then tapas.")
    expect(page.locator("#pg-model")).to_have_value("openai:gpt-4.1-mini")
    page.locator("#pg-messages").fill(json.dumps([{"role": "user", "content": "Plan a day in Seville"}]))
    fake_provider.reply({"text": "Alcázar at opening time, then the cathedral."})
    page.locator("#pg-run").click()
    expect(page.locator("#pg-run-0 .pg-diff")).to_contain_text("Alcázar at opening time", timeout=15_000)
    assert fake_provider.count() == 2
    assert "Seville" in json.dumps(fake_provider.requests()[1]["body"]["messages"])
    shoot(page, "h40-playground-otel")
