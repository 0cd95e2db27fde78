"""The search index: each run's words, made with its load (or its live batches), found by a query's words."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pytest

from devtool.store import LoadError, Store, append_events, database, load_file, schema_words_7
from devtool.store.otlp_sql import LINE_STRIDE
from devtool.store.queries import get_run, list_runs
from devtool.store.schema import MIGRATIONS
from devtool.store.search import LONGEST, index_source, words
from tests.conftest import Trace
from tests.otlp_factory import genai_run, legacy_run, openinference_run, write_jsonl


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


def test_a_file_indexed_a_few_events_at_a_time_has_the_words_of_one_statement(store: Store, tmp_path: Path) -> None:
    first, second = talking_run(), talking_run()
    path = tmp_path / "two.jsonl"
    path.write_bytes(first.write(tmp_path / "a.jsonl").read_bytes() + second.write(tmp_path / "b.jsonl").read_bytes())
    loaded = load_file(store, path)
    whole = store.query("SELECT trace_id, term FROM search_terms ORDER BY ALL")
    with store.transaction() as conn:
        conn.execute("DELETE FROM search_terms")
        chunks = index_source(conn, loaded.source_id, chunk=7)  # 7 does not divide the file's events
    assert loaded.events % 7 != 0
    assert chunks == loaded.events // 7 + 1
    assert store.query("SELECT trace_id, term FROM search_terms ORDER BY ALL") == whole
    assert {trace for trace, _ in whole} == {first.trace_id, second.trace_id}


def test_an_otlp_files_lines_millions_of_ids_apart_are_indexed_in_chunks_of_events(
    store: Store, tmp_path: Path
) -> None:
    """An OTLP file's lines are numbered `LINE_STRIDE` ids apart: a chunk of a million ids held one line,
    and a file of 100,000 spans was indexed in 818 statements (18 s of a 28 s load)."""
    path = write_jsonl(
        tmp_path / "otlp.jsonl", [genai_run("1" * 32), openinference_run("2" * 32), legacy_run("3" * 32)]
    )
    loaded = load_file(store, path)
    whole = store.query("SELECT trace_id, term FROM search_terms ORDER BY ALL")
    first, last = store.query("SELECT min(event_id), max(event_id) FROM events")[0]
    with store.transaction() as conn:
        conn.execute("DELETE FROM search_terms")
        chunks = index_source(conn, loaded.source_id)
    assert last - first > 2 * LINE_STRIDE  # three lines: chunks of ids would be at least three
    assert chunks == 1
    assert store.query("SELECT trace_id, term FROM search_terms ORDER BY ALL") == whole
    assert {trace for trace, _ in whole} == {"1" * 32, "2" * 32, "3" * 32}


def test_a_store_of_schema_6_upgrades_with_its_costs_counts_and_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store written before the search index (schema 6, main's before this: costs, event keys, no
    words, no counts on runs) gets them from what it holds when it is opened, and keeps its costs."""
    t = talking_run()
    call = t.start("model:call")
    t.end(call, success=True, usage={"promptTokens": 9, "completionTokens": 1}, costs={"micro_usd": 955})
    new = Store(tmp_path / "new.duckdb")
    load_file(new, t.write(tmp_path / "run.jsonl"))
    expected = get_run(new, t.trace_id)
    new.close()
    path = tmp_path / "old.duckdb"
    monkeypatch.setattr(database, "MIGRATIONS", MIGRATIONS[:6])
    Store(path).close()
    monkeypatch.undo()
    with duckdb.connect(str(path)) as conn:  # the rows schema 6 has, copied from a store that made them
        conn.execute(f"ATTACH '{tmp_path / 'new.duckdb'}' AS new (READ_ONLY)")
        for table in ("sources", "events", "spans"):
            conn.execute(f"INSERT INTO {table} SELECT * FROM new.{table}")
        conn.execute(
            "INSERT INTO runs SELECT * EXCLUDE (prompts, tools, source_id, depth, name_key, name_span) FROM new.runs"
        )
        assert conn.execute("SELECT count(*) FROM runs WHERE cost_micro_usd = 955").fetchall() == [(1,)]
    upgraded = Store(path)
    try:
        assert upgraded.schema_version == len(MIGRATIONS)
        assert get_run(upgraded, t.trace_id) == expected
        assert (expected.cost_micro_usd, expected.prompts, expected.tools) == (955.0, 3, 1)
        assert str(expected.source).endswith("run.jsonl")
        assert [run.id for run in list_runs(upgraded, search="quarterly")] == [t.trace_id]
    finally:
        upgraded.close()


def test_the_words_of_an_event_over_a_mebibyte_are_found_too(tmp_path: Path) -> None:
    """A long event's words are indexed from the stored event, not beside the insert (memory)."""
    t = Trace()
    root = t.start("runWith", agentId="")
    tools = t.start("tools:execute", root, toolNames=["dump"])
    t.end(tools, toolResults=[{"toolName": "dump", "output": "haystack " * (1 << 18) + "needle"}])
    t.end(root)
    store = Store(tmp_path / "s.duckdb")
    try:
        load_file(store, t.write(tmp_path / "long.jsonl"))
        assert [run.id for run in list_runs(store, search="needle")] == [t.trace_id]
        assert terms(store, t.trace_id).count("needle") == 1
    finally:
        store.close()


def test_text_is_cut_at_every_separator_however_it_runs(store: Store) -> None:
    """Words are what `words` makes of a text, in SQL: cut at spaces, tabs, newlines and ASCII
    punctuation alike, in runs or at the ends, lowercased, letters of other scripts kept in words."""
    text = "Hello,\tWORLD!!  foo__bar\n\n(naïve) café+über-Straße; a1b2---c3 …ellipsis… " + "x" * 70 + " end."
    t = Trace()
    t.point("sys:log", "", message=text, args=["  lead", "trail  ", "1.5e3$"])
    append_events(store, t.events)
    found = set(terms(store, t.trace_id))
    separators = "".join(re.escape(chr(code)) for code in range(1, 128) if not chr(code).isalnum())
    said = f"{text} lead trail 1.5e3$".lower()
    expected = {word for word in re.split(f"[{separators}]+", said) if 0 < len(word) <= LONGEST}
    assert expected <= found
    assert {"hello", "world", "foo", "bar", "naïve", "café", "über", "straße", "a1b2", "c3", "…ellipsis…"} <= found
    assert not any("x" * 65 in term for term in found)
    assert all(term == words(term)[0] for term in found)  # no separator, no capital left in a word


def test_a_load_and_a_live_batch_add_the_words_migration_7_finds_in_their_events(store: Store, tmp_path: Path) -> None:
    """The words `search.terms_sql` adds are those of the SQL migration 7 was released with
    (`schema_words_7`), on events with text in every field, escapes, other scripts and values of other
    kinds than text: the index reads what it can from the stored event's columns, and finds the same."""
    loaded = talking_run()
    odd = loaded.start("custom:span", agentId='Ag"ent\n7/Ω', callId="root/agent:Ag:0\tX", name="Nämé\\of it")
    loaded.point("sys:log", odd, agentId=42, message={"content": "as an object: OBJ-1"}, data=[1, "two\u00e9"])
    loaded.end(odd, error="a bare string error", draft={"text": "draft-words"}, toolNames=["a b", "c/d"])
    load_file(store, loaded.write(tmp_path / "run.jsonl"))
    live = talking_run()
    live.point("sys:log", "", agentId="", callId="", message="live-only words")
    append_events(store, live.events)
    found = store.query("SELECT trace_id, term FROM search_terms ORDER BY ALL")
    assert found == store.query(f"SELECT * FROM ({schema_words_7.TERMS}) ORDER BY ALL")
    assert {("live", live.trace_id), ("ω", loaded.trace_id), ("42", loaded.trace_id)} <= {
        (term, trace) for trace, term in found
    }
