"""The demo data: traces that record their entrypoints, and a journal linked to its agent run."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from devtool.demo.generate import generate
from devtool.journal import FileJournal, RewindEngine


def events(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_generate_writes_traces_and_a_linked_journal(tmp_path: Path) -> None:
    paths = asyncio.run(generate(tmp_path / "demo"))
    names = sorted(p.name for p in paths)
    assert names == [
        "billing-ops.invocation-1.trace.jsonl",
        "billing-ops.jsonl",
        "release-check.trace.jsonl",
        "research-go-python.trace.jsonl",
        "research.trace.jsonl",
    ]
    research = events(tmp_path / "demo" / "research.trace.jsonl")
    assert research[0]["metadata"]["entrypoint"] == "devtool.demo.research:main"
    assert research[-1]["success"] is True
    failing = events(tmp_path / "demo" / "release-check.trace.jsonl")
    assert failing[-1]["type"] == "runWith:end"
    assert failing[-1]["success"] is False

    journal = events(tmp_path / "demo" / "billing-ops.jsonl")
    start = next(e for e in journal if e["entry_type"] == "invocation_start")
    invocation = events(tmp_path / "demo" / "billing-ops.invocation-1.trace.jsonl")
    assert start["data"]["trace_id"] == invocation[0]["trace"]["traceId"]
    # The webhook's entries land inside the agent run's time span: the race is visible.
    webhook = next(e for e in journal if e["entry_type"] == "trigger_event" and e["data"]["trigger_type"] == "webhook")
    assert webhook["data"]["payload"]["event"] == "payment_failed"


def test_the_postmortem_plan_at_the_account_hold(tmp_path: Path) -> None:
    asyncio.run(generate(tmp_path))

    async def plan() -> str:
        journal = FileJournal(tmp_path)
        hold = next(e for e in await journal.read("billing-ops") if e.entry_type == "tool_call")
        result = await RewindEngine(journal).plan(process_id="billing-ops", target_entry_id=hold.entry_id)
        before = await RewindEngine(journal).apply(
            process_id="billing-ops", target_entry_id=hold.entry_id, mode="both", record=False
        )
        assert before.context_state == {"account_status": "delinquent", "invoice_state": "reconciling"}
        return result.summary

    assert asyncio.run(plan()) == "preview only: 3 entries affected (0 conversation, 3 code/state)."


def test_generate_refuses_a_folder_with_files(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="not empty"):
        asyncio.run(generate(tmp_path))
