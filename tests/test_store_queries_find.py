"""Text inside a run (`devtool.store.queries.find`): each span field that holds it, with a snippet."""

from __future__ import annotations

from pathlib import Path

import pytest

from devtool.demo import failing
from devtool.store import Store, load_file
from devtool.store.errors import NotFoundError
from devtool.store.queries.find import CONTEXT, find_in_run
from tests.conftest import Trace
from tests.web_runs import record


def test_a_word_of_a_model_answer_names_its_turn_and_field(store: Store, tmp_path: Path) -> None:
    trace = record(store, tmp_path, failing.main, name="release-check")
    hits = find_in_run(store, trace, "Looked").hits
    first = hits[0]
    assert first.field == "message.content"
    assert first.call_id == "root/agent:release-checker:0/agent:fallback:0/turn:demo-model:0"
    assert first.match == "looked"
    assert first.snippet == '…"healthy": "probably", "reason": "the dashboard looked green"}'  # the "{" is cut
    kinds = dict(store.query("SELECT span_id, kind FROM spans WHERE trace_id = ?", [trace]))
    assert {kinds[hit.span_id] for hit in hits} == {"turn"}
    # The answer is resent to the next turns as their input: found there too, a field of a span once.
    assert [hit.field for hit in hits].count("message.content") == 3
    assert len({(hit.span_id, hit.field) for hit in hits}) == len(hits)


def test_tools_memory_errors_and_names_are_found(store: Store, tmp_path: Path) -> None:
    trace = record(store, tmp_path, failing.main, name="release-check")
    fields = {hit.field for hit in find_in_run(store, trace, "payments-api").hits}
    assert {"toolResults[0].input.service", "toolResults[0].error.message"} <= fields
    assert "memory.release" in {hit.field for hit in find_in_run(store, trace, "2026.11.3").hits}
    assert "error.message" in {hit.field for hit in find_in_run(store, trace, "must be boolean").hits}
    named = find_in_run(store, trace, "fallback").hits
    assert named[0].field == "name"
    # Stack traces name the code's files, not what the agents said: not searched.
    assert not [hit for hit in find_in_run(store, trace, "Traceback").hits if "stack" in hit.field]


def test_a_word_the_run_does_not_hold_finds_nothing(store: Store, tmp_path: Path) -> None:
    trace = record(store, tmp_path, failing.main, name="release-check")
    nothing = find_in_run(store, trace, "zebra")
    assert nothing.hits == []
    assert nothing.complete
    assert find_in_run(store, trace, "   ").hits == []
    with pytest.raises(NotFoundError):
        find_in_run(store, "f" * 32, "zebra")


def test_a_long_text_is_cut_around_the_match(store: Store, tmp_path: Path) -> None:
    t = Trace()
    root = t.start("runWith", callId="root")
    text = "a" * 500 + " needle " + "b" * 500
    turn = t.start("turn", root, callId="root/turn:m:0")
    t.end(turn, success=True, message={"role": "assistant", "content": text})
    t.end(root, success=True)
    trace = load_file(store, t.write(tmp_path / "long.jsonl")).traces[0]
    [hit] = find_in_run(store, trace, "needle").hits
    assert hit.span_id == turn
    assert hit.before == "…" + "a" * (CONTEXT - 1) + " "
    assert hit.after == " " + "b" * (CONTEXT - 1) + "…"
