"""`dump_snapshot`: a deep copy of the whole run, running frames marked, and a `snapshot:dump` event."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from devtool.core import MemorySink, OutsideRunError, create_agent, memory, run_with
from devtool.core.debugger import dump_snapshot
from devtool.core.snapshot_tree import snapshot_id


def test_dump_is_a_deep_copy() -> None:
    box: dict[str, Any] = {}

    async def handler(props: Any) -> None:
        memory()["items"] = [1]
        snapshot = dump_snapshot()
        snapshot["root"]["children"]["root/agent:a:0"]["memory"]["items"].append(2)
        box["live"] = dict(memory())
        box["again"] = dump_snapshot()["root"]["children"]["root/agent:a:0"]["memory"]

    asyncio.run(run_with(lambda: create_agent("a", handler)(None)))
    assert box["live"] == {"items": [1]}
    assert box["again"] == {"items": [1]}


def test_running_siblings_and_ancestors_are_running() -> None:
    gate = asyncio.Event()
    box: dict[str, Any] = {}

    async def slow(props: Any) -> None:
        await gate.wait()

    async def watcher(props: Any) -> None:
        await asyncio.sleep(0.01)
        box["snapshot"] = dump_snapshot(metadata={"reason": "mid-flight"})
        gate.set()

    async def parent(props: Any) -> None:
        await asyncio.gather(create_agent("slow", slow)(None), create_agent("watcher", watcher)(None))

    sink = MemorySink()
    asyncio.run(run_with(lambda: create_agent("parent", parent)(None), sinks=[sink]))
    snapshot = box["snapshot"]
    parent_frame = snapshot["root"]["children"]["root/agent:parent:0"]
    statuses = {key: child["state"]["status"] for key, child in parent_frame["children"].items()}
    assert statuses == {"root/agent:parent:0/agent:slow:0": "running", "root/agent:parent:0/agent:watcher:0": "running"}
    assert parent_frame["state"]["status"] == "running"
    assert snapshot["metadata"] == {"reason": "mid-flight"}
    assert snapshot["provenance"]["source"] == "dump"
    assert snapshot["version"] == 1
    (event,) = [e for e in sink.events if e["type"] == "snapshot:dump"]
    assert event["snapshot"] == snapshot
    assert event["snapshotId"] == snapshot_id(snapshot)
    assert event["callId"] == "root/agent:parent:0/agent:watcher:0"


def test_dump_outside_a_run() -> None:
    with pytest.raises(OutsideRunError):
        dump_snapshot()
