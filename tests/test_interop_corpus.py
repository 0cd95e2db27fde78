"""The TypeScript library's own traces (`tests/corpus/rejelly/`) as regression tests of the interop.

- Budgets: our `restore_snapshot` rebuilds each frame's `budgetState` from the trace's usage, and at
  the end of a run it equals, frame by frame, what that library's `dumpSnapshot` counted as it ran.
- Exactly once: each trace posted to `POST /api/v1/traces` as its review exporter posts it (batches
  with `_seq`), every batch posted a second time, is stored once.
- Rewind: at every cut the corpus recorded a restore for, the DevTool's Rewind makes a snapshot that
  the written schema passes and the library's own `runWith` accepts.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from devtool.core.debugger import restore_snapshot
from devtool.store import Store
from devtool.web import create_app
from testkit import rejelly
from tests.conftest import CORPUS
from tests.test_interop_snapshots import SCHEMA

REJELLY = CORPUS / "rejelly"
SCENARIOS = ["simple", "nested", "failure", "zombie", "repeated-tool"]
TOTALS = ("callCount", "promptTokens", "completionTokens", "totalTokens", "costs", "items")


def events_of(scenario: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (REJELLY / f"{scenario}.trace.jsonl").read_text().splitlines()]


def frames(frame: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield frame
    for child in frame.get("children", {}).values():
        yield from frames(child)


def totals(budget: dict[str, Any]) -> dict[str, Any]:
    return {part: {key: budget[part][key] for key in TOTALS} for part in ("own", "aggregate")}


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_rebuilt_budgets_equal_what_the_library_counted(scenario: str) -> None:
    dumped = json.loads((REJELLY / f"{scenario}.dump.json").read_text())
    ours = {frame["callId"]: frame for frame in frames(restore_snapshot(events_of(scenario))["root"])}
    theirs = list(frames(dumped["root"]))
    assert scenario == "zombie" or any(frame["budgetState"]["aggregate"]["callCount"] for frame in theirs)
    for frame in theirs:
        assert totals(ours[frame["callId"]]["budgetState"]) == totals(frame["budgetState"]), frame["callId"]


@pytest.fixture
def client(store: Store) -> Iterator[TestClient]:
    with TestClient(create_app(store), follow_redirects=False) as client:
        yield client


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_each_batch_posted_twice_is_stored_once(client: TestClient, store: Store, scenario: str) -> None:
    events = [{**event, "_seq": seq} for seq, event in enumerate(events_of(scenario))]
    batches = [events[start : start + 10] for start in range(0, len(events), 10)]
    for batch in batches:
        for attempt in range(2):
            answer = client.post("/api/v1/traces", json=batch)
            assert answer.status_code == 200, answer.text
            assert answer.json()["duplicates"] == (len(batch) if attempt else 0)
    (trace_id,) = {event["trace"]["traceId"] for event in events}
    assert client.get("/").status_code == 200  # a page request derives what ingest left pending
    assert store.query("SELECT count(*), count(DISTINCT _seq) FROM (SELECT body->>'_seq' AS _seq FROM events)") == [
        (len(events), len(events))
    ]
    assert store.query("SELECT events FROM runs WHERE trace_id = ?", [trace_id]) == [(len(events),)]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_rewinds_at_the_corpus_cuts_are_accepted_by_the_library(
    client: TestClient, store: Store, scenario: str
) -> None:
    client.post("/api/v1/traces", json=events_of(scenario))
    (trace_id,) = {event["trace"]["traceId"] for event in events_of(scenario)}
    meta = json.loads((REJELLY / f"{scenario}.meta.json").read_text())
    snapshots = []
    for restore in meta["restores"]:
        if not restore["ok"] or not restore["options"]:
            continue
        cut = {"span_id": restore["options"]["spanId"], "anchor": restore["options"]["anchor"]}
        answer = client.post(f"/runs/{trace_id}/rewind", data=cut)
        assert answer.status_code == 303, answer.text
        snapshot = client.get(answer.headers["location"] + ".json").json()
        SCHEMA(snapshot)
        snapshots.append(snapshot)
    assert len(snapshots) >= 4
    assert rejelly.run("accepts.mjs", snapshots) == [{"accepted": True, "error": None}] * len(snapshots)
