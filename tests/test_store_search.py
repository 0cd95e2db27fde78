"""The search index: each run's words, made with its load (or its live batches), found by a query's words."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from devtool.store import LoadError, Store, append_events, database, load_file
from devtool.store.event_sql import insert_events
from devtool.store.queries import list_runs
from devtool.store.schema import MIGRATIONS
from devtool.store.search import LONGEST, words
from tests.conftest import Trace


def terms(store: Store, trace_id: str) -> list[str]:
    return [row[0] for row in store.query("SELECT term FROM search_terms WHERE trace_id = ? ORDER BY term", [trace_id])]


def talking_run() -> Trace:
    """A run whose text is in every field the index reads, and its conversation resent each turn."""
    t = Trace()
    root = t.start("runWith", agentId="", props={"batch": "Nightly-Reconcile"})
    agent = t.start("agent", root, agentId="clerk", callId="root/agent:clerk:0", props={"topic": "ledgers"})
    generation = t.start("generation", agent)
    loop = t.start("promptAgent", generation)
    history = [{"role": "system", "content": "You reconcile invoices"}, {"role": "user", "content": "Check März"}]
    for step in range(3):
        turn = t.start("turn", loop, step=step, messages=history)
        answer = {"role": "assistant", "content": f"Looked at batch{step}", "tool_calls": [{"name": "lookup"}]}
        t.end(turn, success=True, message=answer, rawText=f"raw{step} output")
        history = [*history, answer]
    tools = t.start("tools:execute", loop, toolNames=["lookup"])
    result = {"toolName": "lookup", "input": {"q": "vendor-77"}, "output": {"rows": ["Acme GmbH"]}, "success": True}
    t.end(tools, toolResults=[result])
    t.point("sys:log", loop, message="retrying the LEDGER", args=["attempt two"])
    t.end(generation, memory={"seen": "quarterly"})
    t.end(agent, success=False, error={"name": "Mismatch", "message": "totals differ by 12.50"})
    t.end(root, result={"verdict": "escalate"})
    return t


def test_a_query_is_cut_into_words_as_text_is() -> None:
    assert words("Refund POLICY") == ["refund", "policy"]
    assert words("worker:42/tool_calls") == ["worker", "42", "tool", "calls"]
    assert words("März-Übersicht") == ["märz", "übersicht"]
    assert words(" ::: ") == []


def test_a_run_is_found_by_any_word_of_its_text(store: Store) -> None:
    t = talking_run()
    append_events(store, t.events)
    for query in (
        "nightly reconcile",  # props of the run
        "clerk ledgers",  # agent id and props
        "invoices märz",  # the conversation (unicode letters are part of words)
        "batch2",  # an answer
        "raw1 output",  # the model's raw text
        "lookup",  # a tool call and the tool
        "vendor 77 acme gmbh",  # a tool's input and output
        "ledger attempt two",  # a log line and its arguments
        "quarterly",  # memory
        "mismatch differ 12",  # an error
        "escalate",  # the run's result
    ):
        assert [run.id for run in list_runs(store, search=query)] == [t.trace_id], query
    assert [run.id for run in list_runs(store, search="voic")] == [t.trace_id]  # part of a word
    assert list_runs(store, search="invoices zebra") == []  # every word must be there
    assert list_runs(store, search="lookup", content=False) == []  # names and ids only


def test_each_word_of_a_run_is_kept_once_however_often_it_is_said(store: Store) -> None:
    t = talking_run()
    append_events(store, t.events)
    found = terms(store, t.trace_id)
    assert len(found) == len(set(found))
    assert {"you", "reconcile", "invoices", "märz", "batch0", "batch1", "batch2"} <= set(found)
    assert all(0 < len(term) <= LONGEST for term in found)
    t2 = Trace(t.trace_id, start_ms=t.now + 10)
    t2.point("sys:log", "", message="invoices again, and one new word: zeppelin")
    append_events(store, t2.events)
    again = terms(store, t.trace_id)
    assert set(again) - set(found) == {"again", "and", "one", "new", "word", "zeppelin"}
    assert len(again) == len(set(again))


def test_a_file_load_indexes_its_words_with_its_events_or_not_at_all(store: Store, tmp_path: Path) -> None:
    t = talking_run()
    load_file(store, t.write(tmp_path / "run.jsonl"))
    assert "quarterly" in terms(store, t.trace_id)
    assert [run.id for run in list_runs(store, search="quarterly escalate")] == [t.trace_id]
    broken = Trace()
    broken.point("sys:log", "", message="unfindable")
    path = broken.write(tmp_path / "broken.jsonl")
    path.write_bytes(path.read_bytes() + b"{not json\n")
    with pytest.raises(LoadError):
        load_file(store, path)
    assert store.query("SELECT count(*) FROM search_terms WHERE term = 'unfindable'") == [(0,)]
    assert list_runs(store, search="unfindable") == []


def test_events_stored_before_the_index_are_indexed_by_the_migration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = talking_run()
    path = tmp_path / "old.duckdb"
    monkeypatch.setattr(database, "MIGRATIONS", MIGRATIONS[:3])
    old = Store(path)  # a store of schema 3: events and their run, no search index
    try:
        with old.transaction() as conn:
            relation = "(SELECT body::JSON AS body, n FROM unnest($events) WITH ORDINALITY AS batch(body, n))"
            texts = [orjson.dumps(event).decode() for event in t.events]
            count, _, _ = insert_events(conn, relation, 1, {"events": texts}, derive_spans=False)
            conn.execute(
                "INSERT INTO runs VALUES (?, 'clerk', 0, 1, 'failed', ?, 0, 0, 0, 0, 0, 0, 'clerk', 1, ?)",
                [t.trace_id, count, count],
            )
    finally:
        old.close()
    monkeypatch.undo()
    upgraded = Store(path)
    try:
        assert upgraded.schema_version == len(MIGRATIONS)
        assert [run.id for run in list_runs(upgraded, search="quarterly")] == [t.trace_id]
    finally:
        upgraded.close()
