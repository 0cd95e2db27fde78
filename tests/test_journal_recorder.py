"""`ProcessRecorder`: a process's journal at each level, and invocations linked to real agent runs.

The agent runs for real under `devtool.core.run_with`; its model is a `ScriptedModel` (the one
stand-in the team allows). The trace id in the journal must be the one on every event of the run.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from devtool.core import MemorySink, ScriptedModel, create_agent, memory, prompt
from devtool.journal import (
    FileJournal,
    InMemoryJournal,
    JournalEntry,
    JournalLevel,
    ProcessRecorder,
    ReplayEngine,
    RewindEngine,
    RewindMode,
    apply_rewind,
)

PID = "billing-ops"


def billing_agent(answers: list[str]) -> Any:
    async def handler(props: dict[str, Any]) -> str:
        memory()["account"] = props["account"]
        return str(await prompt(f"Reconcile account {props['account']} for the July cycle."))

    return create_agent("biller", handler, model=ScriptedModel(answers))


async def one_cycle(recorder: ProcessRecorder, sink: MemorySink) -> Any:
    await recorder.transition("running")
    await recorder.trigger("cron", {"at": "2026-07-16T02:00:00"}, trigger_id="nightly")
    await recorder.set_context("account_status", "active")
    await recorder.user_prompt("Reconcile account acme-42 for the July cycle.")
    agent = billing_agent(["acme-42 is reconciled."])
    invocation = await recorder.invoke(lambda: agent({"account": "acme-42"}), sinks=[sink])
    await recorder.assistant_message(invocation.result)
    await recorder.tool_call("send_receipt", {"account": "acme-42"})
    await recorder.tool_result("send_receipt", "sent")
    return invocation


def entries_of(journal: Any) -> list[JournalEntry]:
    return list(asyncio.run(journal.read(PID)))


def test_an_invocation_carries_the_trace_id_of_its_agent_run() -> None:
    journal = InMemoryJournal()
    sink = MemorySink()
    invocation = asyncio.run(one_cycle(ProcessRecorder(journal, PID), sink))

    trace_ids = {event["trace"]["traceId"] for event in sink.events}
    assert trace_ids == {invocation.trace_id}
    assert len(invocation.trace_id) == 32
    assert (invocation.number, invocation.result) == (1, "acme-42 is reconciled.")
    entries = entries_of(journal)
    start = next(e for e in entries if e.entry_type == "invocation_start")
    result = next(e for e in entries if e.entry_type == "invocation_result")
    assert start.data == {"invocation": 1, "trace_id": invocation.trace_id}
    assert result.data["trace_id"] == invocation.trace_id
    assert (result.data["success"], result.data["output"]) == (True, "acme-42 is reconciled.")
    assert result.data["duration_ms"] >= 0
    # The run names the process too: the link goes both ways.
    run_start = next(event for event in sink.events if event["type"] == "runWith:start")
    assert run_start["metadata"] == {"process_id": PID, "invocation": 1}
    # invocation_start was written from inside the run, after it began.
    assert start.timestamp.timestamp() * 1000 >= run_start["timestamp"] - 1


def test_full_level_records_every_step_in_order() -> None:
    journal = InMemoryJournal()
    asyncio.run(one_cycle(ProcessRecorder(journal, PID, level="full"), MemorySink()))
    assert [e.entry_type for e in entries_of(journal)] == [
        "state_transition",
        "trigger_event",
        "context_update",
        "user_prompt",
        "invocation_start",
        "invocation_result",
        "checkpoint",
        "assistant_message",
        "tool_call",
        "tool_result",
    ]
    checkpoint = entries_of(journal)[6].data["state"]
    assert checkpoint == {
        "context_state": {"account_status": "active"},
        "lifecycle_state": "running",
        "invocation_count": 1,
        "conversation": [{"role": "user", "content": "Reconcile account acme-42 for the July cycle."}],
    }


def test_checkpoint_level_keeps_a_recovery_baseline_and_none_keeps_nothing() -> None:
    journal = InMemoryJournal()
    asyncio.run(one_cycle(ProcessRecorder(journal, PID, level=JournalLevel.CHECKPOINT), MemorySink()))
    assert [e.entry_type for e in entries_of(journal)] == [
        "state_transition",
        "context_update",
        "invocation_result",
        "checkpoint",
    ]
    # The conversation was not journaled message by message, but the checkpoint holds it.
    assert entries_of(journal)[3].data["state"]["conversation"][0]["role"] == "user"

    silent = InMemoryJournal()
    invocation = asyncio.run(one_cycle(ProcessRecorder(silent, PID, level="none"), MemorySink()))
    assert entries_of(silent) == []
    assert invocation.result == "acme-42 is reconciled."


def test_a_failed_invocation_is_recorded_and_still_checkpointed() -> None:
    journal = InMemoryJournal()
    recorder = ProcessRecorder(journal, PID)
    sink = MemorySink()
    agent = billing_agent([])  # the script is empty: the model call fails

    with pytest.raises(Exception, match="script"):
        asyncio.run(recorder.invoke(lambda: agent({"account": "acme-42"}), sinks=[sink]))
    trace_id = sink.events[0]["trace"]["traceId"]
    entries = entries_of(journal)
    assert [e.entry_type for e in entries] == ["invocation_start", "error", "invocation_result", "checkpoint"]
    assert entries[1].data["trace_id"] == entries[2].data["trace_id"] == trace_id
    assert entries[2].data["success"] is False
    assert entries[2].data["error_type"] == entries[1].data["error_type"] != ""
    assert recorder.invocation_count == 1


def test_a_rewind_through_the_recorder_is_what_recovery_finds(tmp_path: Path) -> None:
    async def scenario() -> tuple[ProcessRecorder, dict[str, Any], Any]:
        journal = FileJournal(tmp_path)
        recorder = ProcessRecorder(journal, PID)
        await recorder.transition("running")
        await recorder.set_context("account_status", "active")
        await recorder.set_context("invoice_state", "reconciling")
        await recorder.checkpoint()
        await recorder.set_context("account_status", "delinquent")
        bad = (await journal.read(PID, entry_type="context_update"))[-1]
        await recorder.set_context("action", "account_hold_applied")
        result = await recorder.rewind(bad.entry_id, RewindMode.BOTH, actor="oncall@acme")
        return recorder, await ReplayEngine(FileJournal(tmp_path)).recover(PID), result

    recorder, recovered, result = asyncio.run(scenario())
    rewound = {"account_status": "active", "invoice_state": "reconciling"}
    assert result.context_state == recorder.context_state == rewound
    assert recovered["context_state"] == rewound
    assert recovered["entries_replayed"] == 0  # it starts from the checkpoint written after the rewind
    kinds = [e.entry_type for e in entries_of(FileJournal(tmp_path))]
    assert kinds[-2:] == ["rewind", "checkpoint"]

    resumed = asyncio.run(ProcessRecorder.resume(FileJournal(tmp_path), PID))
    assert resumed.state() == recorder.state()


def test_without_the_checkpoint_recovery_would_bring_the_rewound_state_back() -> None:
    # Why apply_rewind exists: the engine alone records the rewind, and recover ignores it.
    async def scenario(helper: bool) -> dict[str, Any]:
        journal = InMemoryJournal()
        for number, value in enumerate(["active", "delinquent"]):
            await journal.append(
                JournalEntry(
                    entry_id=f"e{number}",
                    process_id=PID,
                    entry_type="context_update",
                    data={"key": "status", "value": value},
                )
            )
        if helper:
            await apply_rewind(journal, process_id=PID, target_entry_id="e1", mode="both")
        else:
            await RewindEngine(journal).apply(process_id=PID, target_entry_id="e1", mode="both")
        return dict((await ReplayEngine(journal).recover(PID))["context_state"])

    assert asyncio.run(scenario(helper=False)) == {"status": "delinquent"}
    assert asyncio.run(scenario(helper=True)) == {"status": "active"}


def test_apply_rewind_keeps_what_a_rewind_does_not_take_back_and_cancel_writes_nothing() -> None:
    async def scenario() -> tuple[dict[str, Any] | None, int, int]:
        journal = InMemoryJournal()
        recorder = ProcessRecorder(journal, PID)
        await recorder.set_context("a", 1)
        await journal.checkpoint(PID, {**recorder.state(), "mission": {"goal": "reconcile"}})
        await recorder.set_context("a", 2)
        target = (await journal.read(PID))[-1].entry_id
        before = len(await journal.read(PID))
        await apply_rewind(journal, process_id=PID, target_entry_id=target, mode="cancel")
        after_cancel = len(await journal.read(PID))
        await apply_rewind(journal, process_id=PID, target_entry_id=target, mode="both")
        return await journal.last_checkpoint(PID), before, after_cancel

    checkpoint, before, after_cancel = asyncio.run(scenario())
    assert before == after_cancel
    assert checkpoint is not None
    assert checkpoint["mission"] == {"goal": "reconcile"}
    assert checkpoint["context_state"] == {"a": 1}
