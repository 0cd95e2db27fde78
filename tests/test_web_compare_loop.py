"""The compare page keeps no other request waiting: its store work (and its rendering) runs off the
event loop, so a compare of big runs leaves the server answering everyone else meanwhile."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import httpx2
import orjson
import pytest

from devtool.store import Store, load_file
from devtool.web import create_app
from tests.conftest import Trace

COMPARES = 5


def runs_of_one_name(path: Path, runs: int, calls: int) -> list[str]:
    """A file of `runs` runs of one agent, `calls` model calls each: each run's relatives are the others."""
    traces = []
    for index in range(runs):
        t = Trace(start_ms=1_000_000_000_000.0 + index * 60_000.0)
        root = t.start("runWith")
        agent = t.start("agent", root, agentId="researcher")
        for call in range(calls):
            t.end(t.start("model:call", agent), usage={"promptTokens": call + index, "completionTokens": 1})
        t.end(agent)
        t.end(root)
        traces.append(t)
    path.write_bytes(b"".join(orjson.dumps(event) + b"\n" for t in traces for event in t.events))
    return [t.trace_id for t in traces]


@pytest.mark.anyio
async def test_other_requests_are_answered_while_a_compare_is_in_flight(store: Store, tmp_path: Path) -> None:
    """`/compare?a=`: the runs to compare run A with (its relatives, their lineage), each a store query."""
    ids = runs_of_one_name(tmp_path / "runs.jsonl", 200, 40)
    load_file(store, tmp_path / "runs.jsonl")
    answered: list[float] = []
    in_flight: list[tuple[float, float]] = []
    done = anyio.Event()
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=create_app(store)), base_url="http://x") as client:

        async def other_requests() -> None:
            while not done.is_set():
                # The sign-in page: answered on the event loop itself, in a millisecond, when it is free.
                assert (await client.get("/login")).status_code == 303
                answered.append(time.monotonic())
                await anyio.sleep(0.001)

        async with anyio.create_task_group() as group:
            group.start_soon(other_requests)
            await anyio.sleep(0.05)
            for _ in range(COMPARES):
                began = time.monotonic()
                page = await client.get(f"/compare?a={ids[0]}")
                in_flight.append((began, time.monotonic()))
                assert page.status_code == 200
                assert ids[-1] in page.text  # the newest of its relatives, listed
            done.set()
    # Answered on the event loop while a compare ran in a thread: none, when the compare holds the loop.
    meanwhile = [t for t in answered if any(began < t < ended for began, ended in in_flight)]
    assert len(meanwhile) >= 2 * COMPARES, f"{len(meanwhile)} requests answered during {COMPARES} compares"
