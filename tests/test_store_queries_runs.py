"""The runs list: traces and process journals together, newest first, searchable, filterable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from devtool.store import NotFoundError, Store, append_events, load_file
from devtool.store.queries import get_run, list_runs
from tests.conftest import CORPUS, Trace

# Runs in 2001: older than the billing-ops journal they are listed with.
EPOCH = 1_000_000_000_000.0


def run(name: str, *, at: float, failed: bool = False, running: bool = False, note: str = "") -> Trace:
    t = Trace(start_ms=at)
    root = t.start("runWith")
    agent = t.start("agent", root, agentId=name, props={"note": note})
    call = t.start("model:call", agent)
    t.end(call, usage={"promptTokens": 10, "completionTokens": 5})
    t.end(agent, success=not failed)
    if not running:
        t.end(root, success=not failed)
    return t


@pytest.fixture
def runs(store: Store) -> dict[str, Trace]:
    made = {
        "old": run("archivist", at=EPOCH + 1_000_000.0, note="50% off_sale"),
        "failed": run("breaker", at=EPOCH + 2_000_000.0, failed=True),
        "live": run("streamer", at=EPOCH + 3_000_000.0, running=True),
    }
    for trace in made.values():
        append_events(store, trace.events)
    load_file(store, CORPUS / "promptise" / "billing-ops.journal.jsonl")
    return made


def test_traces_and_journals_newest_first(store: Store, runs: dict[str, Trace]) -> None:
    listed = list_runs(store)
    assert [(r.kind, r.name) for r in listed] == [
        ("journal", "billing-ops"),  # 2026: the newest
        ("trace", "streamer"),
        ("trace", "breaker"),
        ("trace", "archivist"),
    ]
    streamer = listed[1]
    assert (streamer.status, streamer.running, streamer.events, streamer.agents) == ("running", 1, 5, 1)
    assert (streamer.prompt_tokens, streamer.completion_tokens, streamer.total_tokens) == (10, 5, 15)
    assert streamer.trace_id == runs["live"].trace_id
    assert streamer.process_id is None
    journal = listed[0]
    assert (journal.events, journal.status, journal.duration_ms) == (10, "running", 270_000.0)
    assert journal.trace_id is None


def test_status_filter(store: Store, runs: dict[str, Trace]) -> None:
    assert [r.name for r in list_runs(store, status="failed")] == ["breaker"]
    assert [r.name for r in list_runs(store, status="completed")] == ["archivist"]
    with pytest.raises(ValueError, match="status must be one of"):
        list_runs(store, status="bogus")


def test_search_by_name_agent_content_and_id(store: Store, runs: dict[str, Trace]) -> None:
    assert [r.name for r in list_runs(store, search="STREAM")] == ["streamer"]
    assert [r.name for r in list_runs(store, search="acme-42")] == ["billing-ops"]  # in an entry's data
    assert [r.name for r in list_runs(store, search=runs["failed"].trace_id[-10:])] == ["breaker"]
    # A trace's text by its words: each of the query's, in any order, part of one of the run's.
    assert [r.name for r in list_runs(store, search="50% off_")] == ["archivist"]
    assert [r.name for r in list_runs(store, search="SALE 50")] == ["archivist"]
    assert [r.name for r in list_runs(store, search="ale")] == ["archivist"]
    assert list_runs(store, search="50 offsale") == []
    assert list_runs(store, search="nothing like this") == []
    assert list_runs(store, search="acme-42", content=False) == []  # names and ids only
    assert [r.name for r in list_runs(store, search="STREAM", content=False)] == ["streamer"]


def test_paging(store: Store, runs: dict[str, Trace]) -> None:
    everything = [r.id for r in list_runs(store)]
    assert [r.id for r in list_runs(store, limit=2)] + [r.id for r in list_runs(store, limit=2, offset=2)] == everything


def test_one_run_by_id(store: Store, runs: dict[str, Trace]) -> None:
    assert get_run(store, runs["old"].trace_id).name == "archivist"
    assert get_run(store, "billing-ops").kind == "journal"
    with pytest.raises(NotFoundError, match="no run or process journal 'nope'"):
        get_run(store, "nope")
    assert get_run(store, "billing-ops", kind="journal").kind == "journal"
    with pytest.raises(NotFoundError, match="no run 'billing-ops'"):
        get_run(store, "billing-ops", kind="trace")


def test_an_empty_store_has_no_runs(store: Store) -> None:
    assert list_runs(store) == []


def test_counts_of_prompts_and_tools_and_the_source(store: Store, tmp_path: Path) -> None:
    t = Trace()
    root = t.start("agent", agentId="counter")
    for step in range(3):
        t.end(t.start("turn", root, step=step))
    t.end(t.start("tools:execute", root, toolNames=["search", "fetch"]))
    t.end(t.start("tools:execute", root, toolNames=["search"]))
    t.end(root)
    path = t.write(tmp_path / "counted.trace.jsonl")
    load_file(store, path)
    load_file(store, CORPUS / "promptise" / "billing-ops.journal.jsonl")
    trace, journal = get_run(store, t.trace_id), get_run(store, "billing-ops")
    assert (trace.prompts, trace.tools, trace.source_kind, trace.source) == (3, 3, "trace-jsonl", str(path))
    assert (journal.prompts, journal.tools, journal.source_kind) == (0, 0, "journal-jsonl")
    assert str(journal.source).endswith("billing-ops.journal.jsonl")
    assert [(r.prompts, r.tools) for r in list_runs(store) if r.kind == "trace"] == [(3, 3)]


def test_a_journals_status_is_its_last_lifecycle_state_a_transitions_or_a_checkpoints(
    store: Store, tmp_path: Path
) -> None:
    def entry(n: int, entry_type: str, data: dict[str, object]) -> str:
        return json.dumps(
            {
                "entry_id": f"e{n}",
                "process_id": "p",
                "timestamp": f"2026-07-16T02:00:0{n}+00:00",
                "entry_type": entry_type,
                "data": data,
            }
        )

    stopped = [
        entry(1, "state_transition", {"from_state": "created", "to_state": "running"}),
        entry(2, "checkpoint", {"state": {"context_state": {}, "lifecycle_state": "running"}}),
        entry(3, "state_transition", {"from_state": "running", "to_state": "stopped"}),
    ]
    path = tmp_path / "p.jsonl"
    path.write_text("\n".join(stopped) + "\n")
    load_file(store, path)
    assert get_run(store, "p").status == "completed"
    # A rewind to before the stop: its checkpoint puts the process back to running.
    rewound = [
        entry(4, "rewind", {"target_entry_id": "e3", "mode": "both"}),
        entry(5, "checkpoint", {"state": {"context_state": {}, "lifecycle_state": "running"}}),
    ]
    path.write_text("\n".join(stopped + rewound) + "\n")
    load_file(store, path)
    assert get_run(store, "p").status == "running"


def test_a_page_keeps_its_order_when_the_store_has_more_files_than_the_page_has_runs(
    store: Store, tmp_path: Path
) -> None:
    """Each run from a file of its own, loaded oldest first: with more files than the page has rows, DuckDB
    joins the page to its files from the files' side, in their order, so only the outer sort keeps it newest
    first (a store of a few runs keeps the page's own order through the join)."""
    made = [run(f"agent{index}", at=EPOCH + index * 1000.0) for index in range(40)]
    for index, trace in enumerate(made):
        load_file(store, trace.write(tmp_path / f"{index}.jsonl"))
    newest = [trace.trace_id for trace in reversed(made)]
    for offset in (0, 5, 35):
        assert [r.id for r in list_runs(store, limit=5, offset=offset)] == newest[offset : offset + 5]
