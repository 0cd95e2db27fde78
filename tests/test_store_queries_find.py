"""Text inside a run (`devtool.store.queries.find`): each span field that holds it, with a snippet."""

from __future__ import annotations

from pathlib import Path

import pytest

from devtool.demo import failing
from devtool.store import Store, append_events, load_file
from devtool.store.errors import NotFoundError
from devtool.store.queries.find import CONTEXT, find_in_run
from devtool.store.search import BLOCK
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


def _long_run(steps: int) -> tuple[Trace, str]:
    """A run of `steps` tool calls that all say the same, under one agent."""
    t = Trace()
    root = t.start("runWith", callId="root")
    lead = t.start("agent", root, agentId="lead", callId="root/agent:lead:0")
    for index in range(steps):
        t.span("tools:execute", lead, agentId="lead", callId=f"root/agent:lead:0/tool:step:{index}",
               toolResults=[{"toolName": "step", "input": {"n": index}, "output": "all quiet"}])  # fmt: skip
    return t, lead


def test_a_rare_text_late_in_a_run_past_the_window_is_found_in_the_blocks_that_hold_its_words(
    store: Store, tmp_path: Path
) -> None:
    """A find reads `max_scanned` events at most (a million in the server): the words' blocks say which
    to read, so a text a few events at the end hold is found however far from the start it is."""
    t, lead = _long_run(4 * BLOCK)  # 8 blocks of events before it
    late = t.start("tools:execute", lead, agentId="lead", callId="root/agent:lead:0/tool:probe:0")
    t.end(late, success=False, error={"name": "OSError", "message": "disk quota exceeded on /var/spool"})
    t.end(lead, success=True)
    trace = load_file(store, t.write(tmp_path / "long.jsonl")).traces[0]
    events = store.query("SELECT events FROM runs WHERE trace_id = ?", [trace])[0][0]

    found = find_in_run(store, trace, "Quota exceeded", max_scanned=BLOCK)
    [hit] = found.hits
    assert (hit.span_id, hit.call_id, hit.field) == (late, "root/agent:lead:0/tool:probe:0", "error.message")
    assert hit.snippet == "disk quota exceeded on /var/spool"
    assert hit.match == "quota exceeded"
    assert found.complete
    assert found.searched == events  # the blocks without its words were ruled out
    # A text every block may hold is read from the first event, `max_scanned` of them.
    common = find_in_run(store, trace, "quiet step", max_scanned=BLOCK)  # never said together
    assert common.hits == []
    assert common.searched == BLOCK
    assert not common.complete
    # A word of no event reads none.
    assert find_in_run(store, trace, "quota zebra", max_scanned=BLOCK).complete


def test_a_live_runs_batches_add_their_blocks_once(store: Store) -> None:
    """A live batch's words go to the blocks its events are in, once, though earlier batches share them."""
    t, lead = _long_run(BLOCK // 4)
    append_events(store, t.events)
    late = t.start("tools:execute", lead, agentId="lead", callId="root/agent:lead:0/tool:probe:0")
    t.end(late, success=True, toolResults=[{"toolName": "probe", "input": {}, "output": "all quiet, a rare ptarmigan"}])
    append_events(store, t.events[-2:])
    trace = t.trace_id
    twice = "SELECT block, term FROM search_blocks WHERE trace_id = ? GROUP BY ALL HAVING count(*) > 1"
    assert store.query(f"SELECT count(*) FROM ({twice})", [trace]) == [(0,)]
    [hit] = find_in_run(store, trace, "ptarmigan").hits
    assert (hit.span_id, hit.field) == (late, "toolResults[0].output")
