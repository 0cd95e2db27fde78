"""restore_snapshot on the traces the TypeScript library wrote, against what its own restore answered.

For every restore recorded in `tests/corpus/rejelly/` (latest, and before/after chosen spans) our
snapshot has the same frames, callIds, statuses, outputs, errors, memory and journal entries, once
theirs is rooted as ours is (`snapshot.normalize`). Where that library is wrong (its README measures
it) we differ on purpose, and the tests say how: the zombie scenario (memory attributed by span, a
repaired failure with a message) here, interleaved parallel siblings in test_core_restore.py (a trace
of ours made TypeScript-shaped, since the corpus has none).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from devtool.core import RestoreError
from devtool.core.debugger import restore_snapshot
from devtool.core.snapshot import FrameSnapshot, normalize, validate
from tests.conftest import CORPUS

REJELLY = CORPUS / "rejelly"
SCENARIOS = ["simple", "nested", "failure", "zombie", "repeated-tool"]


def _read(name: str) -> Any:
    return json.loads((REJELLY / name).read_text())


def _events(scenario: str, prefix: int | None = None) -> list[Any]:
    lines = (REJELLY / f"{scenario}.trace.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines[:prefix]]


def _restores() -> list[Any]:
    cases = []
    for scenario in SCENARIOS:
        for restore in _read(f"{scenario}.meta.json")["restores"]:
            if restore["ok"]:
                cases.append(pytest.param(scenario, restore, id=f"{scenario}:{restore['label']}"))
    return cases


def _frames(root: FrameSnapshot) -> dict[str, FrameSnapshot]:
    found = {root["callId"]: root}
    for child in root["children"].values():
        found.update(_frames(child))
    return found


def _restore(scenario: str, restore: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    options = restore["options"] or {}
    events = _events(scenario, restore.get("prefixLength"))
    ours = restore_snapshot(events, span_id=options.get("spanId"), anchor=options.get("anchor", "after"))
    theirs = normalize(_read(f"{scenario}.restore.{restore['label']}.json"))
    return ours, theirs  # type: ignore[return-value]


def test_every_recorded_restore_is_compared() -> None:
    compared = {f"{case.values[0]}.restore.{case.values[1]['label']}.json" for case in _restores()}
    assert compared == {path.name for path in REJELLY.glob("*.restore.*.json")}
    assert len(compared) == 55


@pytest.mark.parametrize(("scenario", "restore"), _restores())
def test_restore_agrees_with_the_typescript_library(scenario: str, restore: dict[str, Any]) -> None:
    ours, theirs = _restore(scenario, restore)
    validate(ours)
    assert ours["provenance"] == theirs["provenance"]
    mine, expected = _frames(ours["root"]), _frames(theirs["root"])
    assert mine.keys() == expected.keys()
    for call_id in expected.keys() - {"root"}:
        frame, oracle = mine[call_id], expected[call_id]
        assert frame["agentId"] == oracle["agentId"]
        assert frame["children"].keys() == oracle["children"].keys()
        assert frame["journal"] == oracle["journal"], call_id
        if scenario != "zombie":  # see test_a_zombie_gets_its_own_memory_and_a_message
            assert frame["memory"] == oracle["memory"], call_id
            assert frame["state"] == oracle["state"], call_id
    # Ours is rooted at the run's own frame, from runWith: theirs at its first agent.
    (first,) = ours["root"]["children"].values()
    assert ours["root"]["state"]["status"] in ("running", "completed")
    assert ours["root"]["state"]["status"] == "running" or first["state"]["status"] != "running"


ZOMBIE = "root/agent:parent:0"
CHILD = "root/agent:parent:0/agent:slow_child:0"
ENDED_FIRST = {
    "name": "ParentEnded",
    "message": f"agent {ZOMBIE} ended before this agent did (marked failed by restore_snapshot)",
}
CANCELLED = {"name": "AbortError", "message": "Cancelled"}


@pytest.mark.parametrize(
    ("label", "parent_memory", "child_memory", "child_state"),
    [
        # The parent returned without awaiting its child; the child was cancelled later.
        ("latest", {"spawned": 1}, {"started": True}, {"status": "failed", "error": CANCELLED}),
        ("subagent0-slow_child.after", {"spawned": 1}, {"started": True}, {"status": "failed", "error": CANCELLED}),
        ("runWith.after", {"spawned": 1}, {}, {"status": "failed", "error": ENDED_FIRST}),
        ("root-agent.after", {"spawned": 1}, {}, {"status": "failed", "error": ENDED_FIRST}),
        ("first-turn.after", {"spawned": 1}, {}, {"status": "failed", "error": ENDED_FIRST}),
        ("truncated-at-runWith-resolve.latest", {"spawned": 1}, {}, {"status": "failed", "error": ENDED_FIRST}),
        ("root-generation0.after", {"spawned": 1}, {}, {"status": "running"}),
    ],
)
def test_a_zombie_gets_its_own_memory_and_a_message(
    label: str, parent_memory: dict[str, Any], child_memory: dict[str, Any], child_state: dict[str, Any]
) -> None:
    (restore,) = [r for r in _read("zombie.meta.json")["restores"] if r["label"] == label]
    ours, theirs = _restore("zombie", restore)
    mine, wrong = _frames(ours["root"]), _frames(theirs["root"])
    assert (mine[ZOMBIE]["memory"], mine[CHILD]["memory"], mine[CHILD]["state"]) == (
        parent_memory,
        child_memory,
        child_state,
    )
    # What the TypeScript library answered: the parent's memory on the child, an error that says nothing.
    assert (wrong[ZOMBIE]["memory"], wrong[CHILD]["memory"]) == ({}, {"spawned": 1})
    assert wrong[CHILD]["state"] in ({"status": "failed", "error": {}}, {"status": "running"})
    assert mine[ZOMBIE]["state"] == wrong[ZOMBIE]["state"]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_zombie_free_cuts_agree_on_every_frame_state(scenario: str) -> None:
    # Before the zombie appears, the zombie scenario agrees with the TypeScript library as well.
    for restore in _read(f"{scenario}.meta.json")["restores"]:
        if restore["ok"] and restore["label"].endswith(".before"):
            ours, theirs = _restore(scenario, restore)
            mine, expected = _frames(ours["root"]), _frames(theirs["root"])
            for call_id in expected.keys() - {"root"}:
                assert (mine[call_id]["state"], mine[call_id]["memory"]) == (
                    expected[call_id]["state"],
                    expected[call_id]["memory"],
                ), (restore["label"], call_id)


def _probe_events(scenario: str, probe: dict[str, Any]) -> list[Any]:
    label = probe["label"]
    if label.startswith("probe:empty-trace"):
        return []
    events = _events(scenario, probe.get("prefixLength"))
    if label == "probe:schemaVersion-mismatch":
        for event in events:
            event["schemaVersion"] = 2
    return events


def _probes() -> list[Any]:
    return [
        pytest.param(scenario, probe, id=f"{scenario}:{probe['label']}")
        for scenario in SCENARIOS
        for probe in _read(f"{scenario}.errors.json")
        if probe["label"] != "probe:schemaVersion-missing"
    ]


@pytest.mark.parametrize(("scenario", "probe"), _probes())
def test_errors_say_what_the_typescript_library_says_and_why(scenario: str, probe: dict[str, Any]) -> None:
    options = probe["options"] or {}
    with pytest.raises(RestoreError) as caught:
        restore_snapshot(
            _probe_events(scenario, probe), span_id=options.get("spanId"), anchor=options.get("anchor", "after")
        )
    # Their sentence, word for word; ours may go on to say why (which span, what to do instead).
    assert str(caught.value).startswith(probe["message"].removesuffix("."))


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_events_without_a_schema_version_are_skipped_not_misread(scenario: str) -> None:
    # Theirs: "schema version undefined does not match". Ours: such events are malformed and skipped;
    # with none usable, the trace is empty, and the message says why.
    events = _events(scenario)
    for event in events:
        del event["schemaVersion"]
    with pytest.raises(RestoreError) as caught:
        restore_snapshot(events)
    assert str(caught.value).startswith(
        f"Restore failed: Trace is empty. It has no usable event: {len(events)} malformed events: "
        f"{len(events)} without a schemaVersion number"
    )


def _journaled(frame: FrameSnapshot, kind: str) -> set[str]:
    found = set(frame["journal"][kind])  # type: ignore[literal-required]
    for child in frame["children"].values():
        found |= _journaled(child, kind)
    return found


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_what_runs_again_on_a_replay_agrees_with_the_typescript_replay(scenario: str) -> None:
    events = _events(scenario)
    restored = restore_snapshot(events)
    prompts, tools = _journaled(restored["root"], "prompt"), _journaled(restored["root"], "tool")
    model_calls = sum(1 for e in events if e["type"] == "turn:end" and e.get("contentHash") not in prompts)
    tool_calls: dict[str, int] = {}
    for event in events:
        for result in event.get("toolResults", []):
            if result.get("contentHash") not in tools:
                tool_calls[result["toolName"]] = tool_calls.get(result["toolName"], 0) + 1
    replayed = _read(f"{scenario}.replay.json")["fromRestoredLatest"]
    assert (model_calls, tool_calls) == (replayed["modelCalls"], replayed["toolCalls"])


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_the_replay_traces_restore_too(scenario: str) -> None:
    lines = (REJELLY / f"{scenario}.replay.trace.jsonl").read_text().splitlines()
    replayed = restore_snapshot([json.loads(line) for line in lines])
    original = restore_snapshot(_events(scenario))
    assert _frames(replayed["root"]).keys() == _frames(original["root"]).keys()
