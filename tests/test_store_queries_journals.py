"""A process journal's state at any entry, from the journal library's own rewind engine, over stored entries."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path

import pytest

from devtool.store import BadLines, NotFoundError, Store, load_file
from devtool.store.queries import journal_entries, journal_state_at, journal_states
from tests.conftest import CORPUS

ORACLES = sorted(p for p in (CORPUS / "promptise").glob("*.oracle.json") if not p.name.startswith("empty"))


@pytest.mark.parametrize("oracle_path", ORACLES, ids=lambda p: p.name.split(".")[0])
def test_the_state_before_each_entry_is_what_promptise_rewinds_to(store: Store, oracle_path: Path) -> None:
    oracle = json.loads(oracle_path.read_text())
    load_file(store, CORPUS / "promptise" / oracle["journal_file"], bad_lines=BadLines.SKIP)
    targets = oracle["apply_record_false"]
    assert targets
    for entry_id, modes in targets.items():
        expected = modes["both"]
        if "error" in expected:  # promptise raised (a ValueError): no such entry
            with pytest.raises(NotFoundError, match=f"no entry {entry_id!r}"):
                journal_state_at(store, oracle["process_id"], entry_id)
            continue
        state = journal_state_at(store, oracle["process_id"], entry_id)
        assert (state.context_state, state.lifecycle_state, state.conversation) == (
            expected["context_state"],
            expected["lifecycle_state"],
            expected["conversation"],
        ), entry_id
        assert list(state.context_state) == list(expected["context_state"])  # insertion order too


def test_the_state_after_an_entry_is_the_state_before_the_next(store: Store) -> None:
    load_file(store, CORPUS / "promptise" / "billing-ops.journal.jsonl")
    ids = [e.entry_id for e in journal_entries(store, "billing-ops")]
    for entry_id, following in itertools.pairwise(ids):
        after = journal_state_at(store, "billing-ops", entry_id, anchor="after")
        before_next = journal_state_at(store, "billing-ops", following)
        assert (after.context_state, after.lifecycle_state, after.conversation) == (
            before_next.context_state,
            before_next.lifecycle_state,
            before_next.conversation,
        )
    last = journal_state_at(store, "billing-ops", "e10", anchor="after")
    assert last.context_state["action"] == "account_hold_applied"
    assert last.entries_before == 10


def test_the_postmortem_of_the_post(store: Store) -> None:
    load_file(store, CORPUS / "promptise" / "billing-ops.journal.jsonl")
    state = journal_state_at(store, "billing-ops", "e09")
    assert state.context_state == {"account_status": "delinquent", "invoice_state": "reconciling"}
    assert [m["content"] for m in state.conversation] == [
        "Reconcile account acme-42 for the July cycle.",
        "acme-42 is delinquent; applying an account hold.",
    ]
    assert (state.entry.entry_type, state.entries_before) == ("tool_call", 8)


def test_entries_in_order_and_by_type(store: Store) -> None:
    load_file(store, CORPUS / "promptise" / "billing-ops.journal.jsonl")
    entries = journal_entries(store, "billing-ops")
    assert [e.entry_id for e in entries] == [f"e{n:02d}" for n in range(1, 11)]
    assert entries[0].data == {"from_state": "created", "to_state": "running"}
    assert [e.entry_id for e in journal_entries(store, "billing-ops", entry_type="trigger_event")] == ["e02", "e06"]
    assert [e.entry_id for e in journal_entries(store, "billing-ops", limit=2, offset=3)] == ["e04", "e05"]


def test_unknown_processes_and_entries(store: Store) -> None:
    load_file(store, CORPUS / "promptise" / "billing-ops.journal.jsonl")
    with pytest.raises(NotFoundError, match="no process journal 'nope'"):
        journal_state_at(store, "nope", "e01")
    with pytest.raises(NotFoundError, match="no entry 'e99'"):
        journal_state_at(store, "billing-ops", "e99")


def test_it_answers_from_inside_an_event_loop(store: Store) -> None:
    load_file(store, CORPUS / "promptise" / "billing-ops.journal.jsonl")

    async def view() -> str:
        return journal_state_at(store, "billing-ops", "e09").lifecycle_state

    assert asyncio.run(view()) == "running"


JOURNALS = sorted(p for p in (CORPUS / "promptise").glob("*.journal.jsonl") if p.stat().st_size)


@pytest.mark.parametrize("journal", JOURNALS, ids=lambda p: p.name.split(".")[0])
def test_the_one_pass_states_are_the_rewind_engines_at_every_entry(store: Store, journal: Path) -> None:
    process_id = load_file(store, journal, bad_lines=BadLines.SKIP).processes[0]
    entries = journal_entries(store, process_id, limit=10_000)
    assert entries
    for entry in entries:
        before, after = journal_states(store, process_id, entry.entry_id)
        for mine, anchor in ((before, "before"), (after, "after")):
            engine = journal_state_at(store, process_id, entry.entry_id, anchor=anchor)  # type: ignore[arg-type]
            assert (mine.context_state, mine.lifecycle_state, mine.conversation, mine.entries_before) == (
                engine.context_state,
                engine.lifecycle_state,
                engine.conversation,
                engine.entries_before,
            ), (entry.entry_id, anchor)
            assert list(mine.context_state) == list(engine.context_state)
            assert (mine.entry, mine.anchor) == (engine.entry, anchor)
    with pytest.raises(NotFoundError, match=f"no entry 'nope' in process journal {process_id!r}"):
        journal_states(store, process_id, "nope")
    with pytest.raises(NotFoundError, match="no process journal 'nope'"):
        journal_states(store, "nope", "e1")
