"""Live attachment end to end: a real `devtool serve`, a real agent process (`devtool run`), real SSE sockets.

The agent is the research demo with a `ScriptedModel` that sleeps between answers, streaming with
`--to` (HttpSink) and writing the same events to a JSONL file with `--trace`: that file is the ground
truth of what the run emitted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import orjson
from playwright.sync_api import Page, expect

from e2e.conftest import Server, ServerFactory
from testkit.checkout import child_env
from testkit.sse import Message, SseStream


def start_agent(
    tmp_path: Path, *, delay: float, to: str | None = None, trace: Path | None = None
) -> subprocess.Popen[str]:
    args = [
        sys.executable,
        "-m",
        "devtool",
        "run",
        "devtool.demo.research:main",
        "--props",
        json.dumps({"delay": delay}),
    ]
    if to is not None:
        args += ["--to", to]
    if trace is not None:
        args += ["--trace", str(trace)]
    env = child_env({**os.environ, "XDG_DATA_HOME": str(tmp_path / "agent-data")})
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def event_ids(messages: list[Message]) -> list[int]:
    return [event["id"] for m in messages if m.event == "events" for event in m.json()["events"]]


def whole_run(server: Server, trace_id: str) -> list[Message]:
    """Every message of the run's stream from its first event, up to the `close` that ends it."""
    stream = SseStream(f"{server.url}runs/{trace_id}/live?after=0")
    try:
        return list(stream.messages())
    finally:
        stream.close()


def first_run(runs: Iterator[Message]) -> tuple[str, int]:
    """The trace id of the first run the runs-list stream names, and the message's id."""
    message = next(m for m in runs if m.event == "runs")
    return message.json()["traces"][0], int(message.id or 0)


def emitted(path: Path) -> list[tuple[str, str, float]]:
    events = [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
    return sorted((e["trace"]["spanId"], e["type"], float(e["timestamp"])) for e in events)


def summarized(messages: list[Message]) -> list[tuple[str, str, float]]:
    return sorted(
        (e["spanId"], e["type"], float(e["timestamp"]))
        for m in messages
        if m.event == "events"
        for e in m.json()["events"]
    )


def test_a_client_that_reconnects_with_last_event_id_gets_every_missed_event_once(
    serve: ServerFactory, tmp_path: Path
) -> None:
    server = serve()
    runs = SseStream(f"{server.url}live/runs")
    trace = tmp_path / "emitted.jsonl"
    agent = start_agent(tmp_path, delay=0.3, to=server.url, trace=trace)
    try:
        listening = runs.messages()
        trace_id, _ = first_run(listening)
        first = SseStream(f"{server.url}runs/{trace_id}/live?after=0")
        before = next(m for m in first.messages() if m.event == "events")
        first.close()  # the connection dies mid-run
        last_seen = int(before.id or 0)
        # Wait until events were stored that the dead connection did not get.
        next(m for m in listening if m.event == "runs" and int(m.id or 0) > last_seen)
        second = SseStream(f"{server.url}runs/{trace_id}/live", last_event_id=str(last_seen))
        after = list(second.messages())
        second.close()
        assert agent.wait(60) == 0
    finally:
        runs.close()
        agent.kill()
    assert after[-1].event == "close"
    missed = event_ids(after)
    assert missed
    assert missed[0] > last_seen
    got = event_ids([before]) + missed
    everything = event_ids(whole_run(server, trace_id))
    assert got == everything
    assert len(set(got)) == len(got)
    assert len(everything) == len(emitted(trace))
    assert summarized([before, *after]) == emitted(trace)


def test_the_agent_finishes_when_the_devtool_stops_in_the_middle_of_its_run(
    serve: ServerFactory, tmp_path: Path
) -> None:
    server = serve()
    runs = SseStream(f"{server.url}live/runs")
    trace = tmp_path / "emitted.jsonl"
    agent = start_agent(tmp_path, delay=0.3, to=server.url, trace=trace)
    try:
        trace_id, _ = first_run(runs.messages())
        server.process.terminate()
        server.process.wait(15)
        out, err = agent.communicate(timeout=60)
    finally:
        runs.close()
        agent.kill()
    assert agent.returncode == 0, err
    assert json.loads(out)["report"].startswith("Recommendation")
    spools = list((tmp_path / "agent-data" / "devtool" / "spool").glob("*.jsonl"))
    assert len(spools) == 1
    assert f"events are spooled to {spools[0]}" in err
    # What reached the DevTool before it stopped, and the spool loaded afterwards: the whole run, once.
    restarted = serve(str(spools[0]), db=server.db)
    messages = whole_run(restarted, trace_id)
    assert messages[-1].event == "close"
    assert summarized(messages) == emitted(trace)
    assert len(emitted(spools[0])) < len(emitted(trace))


def test_a_followed_file_streams_the_run_an_agent_writes_into_it(serve: ServerFactory, tmp_path: Path) -> None:
    trace = tmp_path / "agent.jsonl"
    server = serve("--follow", str(trace))
    runs = SseStream(f"{server.url}live/runs")
    agent = start_agent(tmp_path, delay=0.2, trace=trace)
    try:
        trace_id, _ = first_run(runs.messages())
        messages = whole_run(server, trace_id)
        assert agent.wait(60) == 0
    finally:
        runs.close()
        agent.kill()
    assert messages[-1].event == "close"
    assert summarized(messages) == emitted(trace)


def bars_and_nodes(page: Page) -> tuple[int, int, int]:
    """Spans on the timeline (some bars hold several), nodes in the frame tree, bars drawn running."""
    return page.evaluate(
        "[+document.querySelector('#timeline').dataset.spans, document.querySelectorAll('#tree li.node').length,"
        " document.querySelectorAll('#bars rect.bar.s-running').length]"
    )


def test_the_pages_follow_a_running_agent_without_reload(
    page: Page, serve: ServerFactory, tmp_path: Path, screenshot_path: Callable[[str], Path]
) -> None:
    server = serve()
    page.goto(server.url)
    agent = start_agent(tmp_path, delay=1.0, to=server.url)
    try:
        # The runs list gains the new run, badged live, without a reload.
        row = page.locator("tr.run-row")
        expect(row.locator(".live-badge")).to_have_text("live", timeout=20_000)
        page.screenshot(path=screenshot_path("live-runs-list"), full_page=True)
        row.locator("a.run-link").click()
        expect(page.locator("#run-header .status-badge")).to_have_text("running")
        page.evaluate("window.liveMarker = 'not reloaded'")
        seen: list[tuple[int, int, int]] = []
        while page.locator("#run-header .status-badge").inner_text() != "completed":
            counts = bars_and_nodes(page)
            if not seen or counts != seen[-1]:
                seen.append(counts)
                if len(seen) == 3:
                    page.screenshot(path=screenshot_path("live-run-running"), full_page=True)
            assert agent.poll() in (None, 0), agent.stderr.read() if agent.stderr else ""
            page.wait_for_timeout(50)
        assert agent.wait(30) == 0
    finally:
        agent.kill()
    page.wait_for_timeout(500)
    final = bars_and_nodes(page)
    page.screenshot(path=screenshot_path("live-run-completed"), full_page=True)
    assert page.evaluate("window.liveMarker") == "not reloaded"
    # Spans appeared a few at a time as the agent went, while some were drawn running, and the tree grew.
    spans = [bars for bars, _, _ in seen]
    assert len(set(spans)) >= 4, seen
    assert spans == sorted(spans)
    assert any(running for _, _, running in seen)
    assert final[0] >= spans[-1]
    assert final[2] == 0
    assert [nodes for _, nodes, _ in seen][-1] > seen[0][1]
    # The run is complete: the page stopped listening and shows what the store holds.
    assert page.locator("#run-live [hx-trigger*='sse:']").count() == 0
    expect(page.locator(".run-facts")).to_contain_text("events")
