"""Our snapshots are ones the TypeScript library accepts: every frame carries `budgetState`.

Each way we make a snapshot (`dump_snapshot`, `restore_snapshot`, a Rewind in the web app, a Fork of
it, the `.json` download) is checked twice: against the JSON schema written from that library's zod
schema (`tests/schemas/rejelly_snapshot.schema.json`, which its own corpus snapshots pass), and by
that library itself under Node (`testkit/rejelly/accepts.mjs`: its `runWith` validates a snapshot
before it runs anything). Budgets are rebuilt from the trace's `model:call:end` usage, so a restore
at the end of a run reports what `dump_snapshot` counted while it ran.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fastjsonschema
import pytest
from starlette.testclient import TestClient

from devtool.core import MemorySink, run_with
from devtool.core.debugger import restore_snapshot
from devtool.demo import research
from devtool.store import Store
from devtool.web import create_app
from testkit import rejelly
from tests.conftest import CORPUS
from tests.core_programs import ToolLog, orchestrator, research_model
from tests.web_runs import html, record, rewind, span_of

SCHEMA_FILE = Path(__file__).parent / "schemas" / "rejelly_snapshot.schema.json"
SCHEMA = fastjsonschema.compile(json.loads(SCHEMA_FILE.read_text()))
LEAD = "root/agent:research-lead:0"


def accepted(snapshot: dict[str, Any]) -> None:
    """Valid by the written schema and accepted by the library's own runWith."""
    SCHEMA(snapshot)
    answer = rejelly.run("accepts.mjs", snapshot)
    assert answer == {"accepted": True, "error": None}, answer


def frames(frame: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield frame
    for child in frame.get("children", {}).values():
        yield from frames(child)


def recorded_run() -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The orchestrator program: its events and the snapshot it dumped at the end of its handler."""
    sink = MemorySink()
    dumped: dict[str, Any] = {}
    agent = orchestrator(research_model(), ToolLog(), dumped)
    asyncio.run(run_with(lambda: agent({"topics": ["a", "b"]}), sinks=[sink]))
    return sink.events, dumped["snapshot"]


@pytest.mark.parametrize("path", sorted((CORPUS / "rejelly").glob("*.restore.*.json")), ids=lambda p: p.name)
def test_the_written_schema_passes_the_librarys_own_snapshots(path: Path) -> None:
    SCHEMA(json.loads(path.read_text()))


def test_the_written_schema_refuses_a_frame_without_budget_state() -> None:
    events, _ = recorded_run()
    snapshot = restore_snapshot(events)
    del snapshot["root"]["budgetState"]  # type: ignore[misc]
    with pytest.raises(fastjsonschema.JsonSchemaValueException, match="budgetState"):
        SCHEMA(snapshot)
    answer = rejelly.run("accepts.mjs", snapshot)
    assert answer["accepted"] is False
    assert "root.budgetState: Required" in answer["error"]


def test_dump_and_restore_are_accepted_and_agree_on_budgets() -> None:
    events, dumped = recorded_run()
    accepted(dumped)
    restored = restore_snapshot(events)
    accepted(restored)
    dumped_frames = {frame["callId"]: frame["budgetState"] for frame in frames(dumped["root"])}
    restored_frames = {frame["callId"]: frame["budgetState"] for frame in frames(restored["root"])}
    assert dumped_frames == restored_frames
    calls = [event for event in events if event["type"] == "model:call:end"]
    aggregate = restored["root"]["budgetState"]["aggregate"]
    assert aggregate["callCount"] == len(calls) > 0
    assert aggregate["promptTokens"] == sum(event["usage"]["promptTokens"] for event in calls)
    assert restored["root"]["budgetState"]["own"]["callCount"] == 0


def test_restores_at_every_span_are_accepted() -> None:
    events, _ = recorded_run()
    agents = [event["trace"]["spanId"] for event in events if event["type"] == "agent:end"]
    for span in agents[:3]:
        for anchor in ("before", "after"):
            accepted(restore_snapshot(events, span_id=span, anchor=anchor))  # type: ignore[arg-type]


def test_rewind_fork_and_the_download_are_accepted(store: Store, tmp_path: Path) -> None:
    with TestClient(create_app(store), follow_redirects=False) as client:
        trace_id = record(store, tmp_path, lambda: research.main({"delay": 0}), name="research")
        writer = span_of(store, trace_id, "writer", "agent")
        snapshot_id = rewind(client, trace_id, writer, "before")
        rewound = client.get(f"/snapshots/{snapshot_id}.json").json()
        accepted(rewound)
        assert rewound["root"]["budgetState"]["aggregate"]["callCount"] > 0
        page = html(client.get(f"/snapshots/{snapshot_id}").text)
        (field,) = [f for f in page.css("input[name^='call.']") if f.attributes["value"] == LEAD]
        index = str(field.attributes["name"]).removeprefix("call.")
        forked = client.post(
            f"/snapshots/{snapshot_id}/fork",
            data={f"call.{index}": LEAD, f"memory.{index}": '{"edited": true}'},
        )
        assert forked.status_code == 303, forked.text
        fork = client.get(forked.headers["location"] + ".json").json()
        accepted(fork)
        assert fork["root"]["budgetState"] == rewound["root"]["budgetState"]
