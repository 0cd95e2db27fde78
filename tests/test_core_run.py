"""`run_with`: the root frame, production mode, and snapshots checked before anything runs."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from devtool.core import (
    MemorySink,
    ScriptedModel,
    SnapshotDisabledError,
    SnapshotError,
    create_agent,
    is_snapshot_disabled_error,
    memory,
    run_with,
)
from devtool.core.debugger import dump_snapshot
from tests.core_programs import ToolLog, orchestrator, research_model


def snapshot_of_a_run() -> dict[str, Any]:
    box: dict[str, Any] = {}
    asyncio.run(run_with(lambda: orchestrator(research_model(), ToolLog(), dump_into=box)({"topics": ["a"]})))
    return box["snapshot"]


def test_fn_may_be_sync_or_async_and_events_bracket_the_run() -> None:
    sink = MemorySink()
    assert asyncio.run(run_with(lambda: 3, sinks=[sink])) == 3
    assert [e["type"] for e in sink.events] == ["runWith:start", "runWith:end"]
    assert sink.events[-1]["result"] == 3
    assert sink.events[-1]["success"] is True

    async def afn() -> str:
        memory()["root"] = True
        return "ok"

    assert asyncio.run(run_with(afn, sinks=[sink], metadata={"entrypoint": "m:f"})) == "ok"
    start, end = sink.events[-2:]
    assert start["metadata"] == {"entrypoint": "m:f"}
    assert end["memory"] == {"root": True}


def test_a_failing_run_ends_with_its_error() -> None:
    sink = MemorySink()

    async def afn() -> None:
        raise ValueError("nope")

    with pytest.raises(ValueError, match="nope"):
        asyncio.run(run_with(afn, sinks=[sink]))
    assert sink.events[-1]["type"] == "runWith:end"
    assert sink.events[-1]["success"] is False
    assert sink.events[-1]["error"]["message"] == "nope"


def test_production_mode_records_nothing_but_still_emits_events(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEVTOOL_ENV", "production")
    sink, errors = MemorySink(), []

    async def handler(props: Any) -> str:
        try:
            dump_snapshot()
        except Exception as exc:
            errors.append(exc)
        return "done"

    assert asyncio.run(run_with(lambda: create_agent("a", handler)(None), sinks=[sink])) == "done"
    assert len(errors) == 1
    assert is_snapshot_disabled_error(errors[0])
    assert "dump_snapshot() is disabled" in str(errors[0])
    assert sink.events[0]["config"]["enableSnapshot"] is False
    assert [e["type"] for e in sink.events] == [
        "runWith:start",
        "agent:start",
        "generation:start",
        "generation:end",
        "agent:end",
        "runWith:end",
    ]


def test_production_mode_refuses_a_snapshot_unless_explicitly_enabled(monkeypatch: pytest.MonkeyPatch) -> None:
    snapshot = snapshot_of_a_run()
    monkeypatch.setenv("DEVTOOL_ENV", "production")
    ran: list[int] = []
    with pytest.raises(SnapshotDisabledError, match="pass enable_snapshot=True"):
        asyncio.run(run_with(lambda: ran.append(1), snapshot=snapshot))
    assert ran == []
    model, log = ScriptedModel([]), ToolLog()
    asyncio.run(run_with(lambda: orchestrator(model, log)({"topics": ["a"]}), snapshot=snapshot, enable_snapshot=True))
    assert model.calls == 0
    assert log.total == 0


def test_explicitly_disabled_outside_production_journals_nothing() -> None:
    box: dict[str, Any] = {}

    async def handler(props: Any) -> None:
        with pytest.raises(SnapshotDisabledError):
            dump_snapshot()
        box["ok"] = True

    asyncio.run(run_with(lambda: create_agent("a", handler)(None), enable_snapshot=False))
    assert box == {"ok": True}


def corrupt(snapshot: dict[str, Any], path: list[Any], value: Any) -> dict[str, Any]:
    broken = copy.deepcopy(snapshot)
    target = broken
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return broken


ORCH = "root/agent:orchestrator:0"


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (["version"], 2, "snapshot.version: must be 1, got 2"),
        (["root"], KeyError, "snapshot.root: missing"),
        (["provenance", "traceId"], 7, "snapshot.provenance.traceId: must be a string, got 7"),
        (["root", "children", ORCH, "memory"], [], f"snapshot.root.children['{ORCH}'].memory: must be an object"),
        (
            ["root", "children", ORCH, "state", "status"],
            "done",
            f"snapshot.root.children['{ORCH}'].state.status: must be one of running, completed, failed, got 'done'",
        ),
        (
            ["root", "children", ORCH, "callId"],
            "root/x",
            f"snapshot.root.children['{ORCH}'].callId: must equal its key",
        ),
        (["timestamp"], True, "snapshot.timestamp: must be a number, got True"),
    ],
)
def test_a_malformed_snapshot_fails_before_anything_runs_naming_the_field(
    path: list[Any], value: Any, message: str
) -> None:
    broken = corrupt(snapshot_of_a_run(), path, value)
    ran: list[int] = []
    with pytest.raises(SnapshotError) as raised:
        asyncio.run(run_with(lambda: ran.append(1), snapshot=broken))
    assert str(raised.value).startswith(message)
    assert ran == []


def test_a_bad_journal_entry_is_named() -> None:
    snapshot = snapshot_of_a_run()
    researcher = snapshot["root"]["children"][ORCH]["children"][f"{ORCH}/agent:researcher:0"]
    key = next(iter(researcher["journal"]["tool"]))
    del researcher["journal"]["tool"][key]["contentHash"]
    with pytest.raises(SnapshotError, match=r"journal.tool\['[0-9a-f]{64}'\].contentHash: missing"):
        asyncio.run(run_with(lambda: None, snapshot=snapshot))


def test_not_a_snapshot_at_all() -> None:
    with pytest.raises(SnapshotError, match="snapshot: must be an object, got 'hello'"):
        asyncio.run(run_with(lambda: None, snapshot="hello"))  # type: ignore[arg-type]


def test_a_snapshot_rooted_at_an_agent_frame_is_replayed_too() -> None:
    # The TypeScript library's restore roots its snapshot at the first agent frame.
    snapshot = snapshot_of_a_run()
    agent_rooted = {**snapshot, "root": snapshot["root"]["children"][ORCH]}
    model, log = ScriptedModel([]), ToolLog()
    asyncio.run(run_with(lambda: orchestrator(model, log)({"topics": ["a"]}), snapshot=agent_rooted))
    assert model.calls == 0
    assert log.total == 0


def test_a_finished_runs_frames_are_freed_without_the_garbage_collector() -> None:
    # A frame links to its parent weakly: were the link strong, each run's frame tree would be a cycle
    # that only a collection frees, and recording would fill the process's oldest generation.
    import gc
    import weakref

    from devtool.core.frame import CURRENT_FRAME

    frames: list[weakref.ref[Any]] = []
    model = ScriptedModel(["unused"])

    def leaf(props: Any) -> Any:
        frame = CURRENT_FRAME.get()
        parent = frame.parent
        assert parent is not None
        assert parent.agent_id == "middle"
        assert frame.effective_model() is model  # found through the parents
        frames.append(weakref.ref(frame))
        return props

    async def middle(props: Any) -> Any:
        frames.append(weakref.ref(CURRENT_FRAME.get()))
        return [await create_agent("leaf", leaf)(n) for n in range(props)]

    async def main() -> Any:
        frames.append(weakref.ref(CURRENT_FRAME.get()))
        return await create_agent("middle", middle, model=model)(2)

    gc.collect()
    gc.disable()
    try:
        assert asyncio.run(run_with(main, sinks=[MemorySink()])) == [0, 1]
        assert len(frames) == 4
        assert [ref() for ref in frames] == [None] * 4
    finally:
        gc.enable()
