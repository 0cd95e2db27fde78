"""The first field that holds a text in each of many runs (`devtool.store.queries.find_first`): the runs
search's snippets, found for a page of runs at once."""

from __future__ import annotations

from pathlib import Path

import orjson

from devtool.demo import failing
from devtool.store import Store, load_file
from devtool.store.queries.find import find_in_run
from devtool.store.queries.find_first import first_hits
from devtool.store.search import BLOCK
from tests.conftest import Trace
from tests.test_store_queries_find import _long_run
from tests.web_runs import record


def _otlp_like_turn(answer: str) -> Trace:
    """A run of one turn whose start event holds its answer in its `otel` block (as an OTLP span's
    start event does: the span's attributes hold its output messages) and whose end holds it as the
    answer itself."""
    t = Trace()
    root = t.start("runWith", callId="root")
    otel = {"attributes": {"gen_ai.output.messages": f'[{{"role": "assistant", "content": "{answer}"}}]'}}
    turn = t.start("turn", root, callId="root/turn:m:0", otel=otel)
    t.end(turn, success=True, message={"role": "assistant", "content": answer})
    t.end(root, success=True)
    return t


def test_each_runs_first_hit_is_the_one_its_own_find_gives(store: Store, tmp_path: Path) -> None:
    demo = [record(store, tmp_path, failing.main, name=f"release-check-{i}") for i in range(3)]
    t, lead = _long_run(3 * BLOCK)  # the text is in its fourth block
    late = t.start("tools:execute", lead, agentId="lead", callId="root/agent:lead:0/tool:probe:0")
    t.end(late, success=False, error={"name": "OSError", "message": "the dashboard looked red"})
    t.end(lead, success=True)
    long_run = load_file(store, t.write(tmp_path / "long.jsonl")).traces[0]
    quiet = load_file(store, _long_run(3)[0].write(tmp_path / "quiet.jsonl")).traces[0]

    found = first_hits(store, [*demo, long_run, quiet, "f" * 32], "dashboard looked")

    assert set(found) == {*demo, long_run}  # not the run without it, nor a run that is not there
    for trace in demo:
        assert found[trace] == find_in_run(store, trace, "dashboard looked", limit=1).hits[0]
        assert found[trace].field == "message.content"
    assert (found[long_run].span_id, found[long_run].field) == (late, "error.message")
    assert found[long_run].snippet == "the dashboard looked red"


def test_a_field_outside_the_otel_block_is_shown_first(store: Store, tmp_path: Path) -> None:
    trace = load_file(store, _otlp_like_turn("See quokkaberry for details.").write(tmp_path / "otlp.jsonl")).traces[0]
    # The run's first event holds the word only in its `otel` block: its end event's answer is shown.
    [first_event_field] = {hit.field for hit in find_in_run(store, trace, "quokkaberry").hits if hit.restated}
    assert first_event_field == "otel.attributes.gen_ai.output.messages"
    hit = first_hits(store, [trace], "quokkaberry")[trace]
    assert hit.field == "message.content"
    assert hit.snippet == "See quokkaberry for details."
    assert not first_hits(store, [trace], "nowhere")


def test_no_runs_or_no_words_ask_nothing(store: Store, tmp_path: Path) -> None:
    trace = record(store, tmp_path, failing.main, name="release-check")
    assert first_hits(store, [], "dashboard") == {}
    assert first_hits(store, [trace], " ;; ") == {}


def test_runs_read_together_take_their_own_events_only_and_a_long_range_is_read_alone(
    store: Store, tmp_path: Path
) -> None:
    """The page's short runs are read by one scan of their ranges: a run between them, or inside one's
    range (events interleaved, as live runs are), gives none of its events to theirs; a run whose
    blocks to read span a block or more is read alone, up to its first hits."""
    runs = [Trace() for _ in range(3)]
    for index, t in enumerate(runs):
        root = t.start("runWith", callId="root")
        tool = t.start("tools:execute", root, callId=f"root/tool:probe:{index}")
        t.end(tool, success=False, error={"name": "OSError", "message": f"run {index}: the dashboard looked red"})
        t.end(root, success=True)
    interleaved = [event for events in zip(*(t.events for t in runs), strict=True) for event in events]
    path = tmp_path / "interleaved.jsonl"
    path.write_bytes(b"".join(orjson.dumps(event) + b"\n" for event in interleaved))
    first, middle, last = load_file(store, path).traces
    t, lead = _long_run(2 * BLOCK)  # every step says it: its blocks to read are 16 blocks of ids
    for index in range(2 * BLOCK):
        output = f"the dashboard looked fine {index}"
        t.span("tools:execute", lead, agentId="lead", callId=f"root/agent:lead:0/tool:look:{index}",
               toolResults=[{"toolName": "look", "input": {}, "output": output}])  # fmt: skip
    t.end(lead, success=True)
    long_run = load_file(store, t.write(tmp_path / "long.jsonl")).traces[0]

    found = first_hits(store, [first, last, long_run], "dashboard looked")

    assert set(found) == {first, last, long_run}  # not the run between them, which was not asked
    assert first_hits(store, [middle], "dashboard looked")[middle].snippet == "run 1: the dashboard looked red"
    assert found[first].snippet == "run 0: the dashboard looked red"
    assert found[last].snippet == "run 2: the dashboard looked red"
    assert found[long_run].snippet == "the dashboard looked fine 0"
    for trace in (first, last, long_run):
        assert found[trace] == find_in_run(store, trace, "dashboard looked", limit=1).hits[0]
