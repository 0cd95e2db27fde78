"""The done-when of recording agents people already have, for each client (`instrument_agents.PROGRAMS`):
recorded with `devtool.record` into a real `devtool serve`, the run page shows its agents, turns and
tools; a rewind before its second model request and a replay make exactly the requests after the cut;
a changed system prompt makes only the requests that read it live."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

import devtool
import devtool.instrument
from devtool.core import MemorySink, run_with
from devtool.core.debugger import dump_snapshot
from testkit.fake_provider import FakeProvider
from tests.conftest import running_serve
from tests.instrument_agents import CHANGED_WRITER, PROGRAMS, QUESTION, TOOL_RUNS, WRITER, Program, script
from tests.test_web_replay import http
from tests.web_runs import html

devtool.instrument.install()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real `devtool serve` on loopback; its URL."""
    folder = tmp_path_factory.mktemp("serve")
    with running_serve(folder / "s.db") as server:
        yield server.url.rstrip("/")


def recorded(program: Program, fake: FakeProvider, url: str) -> tuple[str, list[Any], dict[str, Any]]:
    """The program recorded into the DevTool at `url`: its trace id, events and final snapshot."""
    sink = MemorySink()

    async def main() -> dict[str, Any]:
        await program.run(fake, WRITER)
        return dict(dump_snapshot())

    with devtool.record(program.name, to=[url, sink]) as run:
        snapshot = asyncio.run(main())
    assert run.trace_id is not None
    return run.trace_id, sink.events, snapshot


def replayed(
    program: Program, fake: FakeProvider, snapshot: dict[str, Any], prompt: str = WRITER
) -> tuple[int, list[Any]]:
    """The program replayed from `snapshot`: how many requests reached the provider, and the events."""
    before, sink = fake.count(), MemorySink()
    asyncio.run(run_with(lambda: program.run(fake, prompt), snapshot=snapshot, sinks=[sink]))
    return fake.count() - before, sink.events


def page_names(url: str, trace_id: str, wanted: set[str], span: str = "") -> list[str]:
    """The frame tree's names on the run page (opened down to `span`), once its spans are derived (a
    moment after ingest)."""
    deadline = time.monotonic() + 20
    while True:
        status, body, _ = http(f"{url}/runs/{trace_id}" + (f"?span={span}" if span else ""))
        names = [node.text(strip=True) for node in html(body).css("#tree .row .name")] if status == 200 else []
        if wanted <= set(names) or time.monotonic() > deadline:
            return names
        time.sleep(0.2)


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_a_recorded_program_shows_rewinds_and_replays_exactly_what_follows(
    program: Program, fake_provider: FakeProvider, served: str
) -> None:
    script(fake_provider, handoff=program.handoff)
    TOOL_RUNS.clear()
    trace_id, events, final = recorded(program, fake_provider, served)
    assert fake_provider.count() == program.requests
    assert TOOL_RUNS == ["weather Lisbon", "hotels Lisbon"]
    agents = ["support", "write"] if program.handoff else ["researcher", "writer"]
    turns = [f"turn {n}" for n in range(program.requests - 1)]
    # A framework's own agents nest the turns and tools deeper than the tree opens: open it down to one.
    tool_span = next(e for e in events if e["type"] == "tools:execute:start")["trace"]["spanId"]
    names = page_names(served, trace_id, {*agents, *turns[:1], "weather", "hotels"}, tool_span)
    assert {*agents, "turn 0", "turn 1", "weather", "hotels"} <= set(names), names
    assert names.count("weather") == names.count("hotels") == 1
    # Each turn shows what the model saw and what it cost, whichever client made the request.
    starts = [e for e in events if e["type"] == "turn:start"]
    assert QUESTION in orjson.dumps(starts[0]["messages"]).decode()
    offered = {tool["name"] for start in starts for tool in start["toolConfig"]["tools"]}
    assert {"weather", "hotels"} <= offered
    calls = [e for e in events if e["type"] == "model:call:end"]
    assert len(calls) == program.requests
    assert all(call["usage"]["totalTokens"] > 0 and call["costs"]["micro_usd"] > 0 for call in calls)

    # Rewind to just before the second model request, through the DevTool, and replay from there.
    second = [e for e in events if e["type"] == "turn:start"][1]["trace"]["spanId"]
    status, _, headers = http(f"{served}/runs/{trace_id}/rewind", {"span_id": second, "anchor": "before"})
    assert status == 303
    status, body, _ = http(f"{served}{headers['location']}.json")
    assert status == 200
    TOOL_RUNS.clear()
    live, replay_events = replayed(program, fake_provider, orjson.loads(body))
    assert live == program.requests - 1
    # The tools called before the cut are served from the snapshot (with a handoff first, none was).
    assert (["weather Lisbon", "hotels Lisbon"] if program.handoff else ["hotels Lisbon"]) == TOOL_RUNS
    ends = [e["cache"] for e in replay_events if e["type"] == "turn:end"]
    assert ends == [True] + [False] * (program.requests - 1)

    # The whole run again with the writer's system prompt changed: only the writer's request is made.
    TOOL_RUNS.clear()
    live, replay_events = replayed(program, fake_provider, final, CHANGED_WRITER)
    assert live == 1
    assert TOOL_RUNS == []
    asked = fake_provider.requests()[-1]["body"]
    assert CHANGED_WRITER in orjson.dumps(asked).decode()
    assert [e["cache"] for e in replay_events if e["type"] == "turn:end"] == [True] * (program.requests - 1) + [False]
