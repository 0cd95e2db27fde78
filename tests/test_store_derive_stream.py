"""The streamed derive of a big load (a chunk of events at a time) makes exactly the spans of the whole one.

Each trace here is loaded twice, into stores of its own: derived at once, and derived in chunks of
every size from one event up; spans and run summaries must be equal, column for column. The traces
are made to hit what a chunk boundary can split: a span open across chunks, a log line before its
span's start, a duplicated event, children before their parents, a parent cycle, interleaved runs.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import duckdb
import orjson
import pytest

from bench.gen_trace import generate
from devtool.store import Store, derive, derive_stream, load_file
from devtool.store.event_sql import insert_events
from devtool.store.span_sql import SHOWN
from tests.conftest import CORPUS, Trace

_SPAN_COLUMNS = (
    "trace_id, span_id, parent_span_id, kind, instant, name, agent_id, call_id, start_ts, end_ts, status, "
    "error, content_hash, cache, start_event_id, end_event_id, events, depth, frame_parent_id, frame_children"
)


def stage(conn: duckdb.DuckDBPyConnection, events: list[dict[str, Any]], *, gap: int = 1) -> None:
    """Store `events` without deriving their spans, numbered `gap`, `2 * gap`, ... (an OTLP file's
    lines leave gaps of millions)."""
    relation = f"(SELECT body::JSON AS body, {int(gap)} * n AS n FROM unnest($events) WITH ORDINALITY AS b(body, n))"
    insert_events(conn, relation, 1, {"events": [orjson.dumps(event).decode() for event in events]}, derive_spans=False)


def derived(tmp_path: Path, name: str, events: list[dict[str, Any]], chunk: int) -> tuple[list[Any], list[Any]]:
    """The spans and runs of `events` derived with `chunk` (bigger than the load: all at once)."""
    store = Store(tmp_path / f"{name}-{chunk}.duckdb")
    try:
        with store.transaction() as conn:
            stage(conn, events)
            derive.refresh(conn, 0, chunk=chunk)
        spans = store.query(f"SELECT {_SPAN_COLUMNS} FROM spans ORDER BY trace_id, span_id")
        runs = store.query("SELECT * FROM runs ORDER BY trace_id")
        assert not store.query("SELECT table_name FROM duckdb_tables() WHERE temporary")  # nothing left behind
        return spans, runs
    finally:
        store.close()


def assert_same_at_every_chunk(tmp_path: Path, name: str, events: list[dict[str, Any]], sizes: list[int]) -> None:
    whole = derived(tmp_path, name, events, len(events) + 1)
    assert whole[0], "the trace made no spans"
    for size in sizes:
        streamed = derived(tmp_path, name, events, size)
        assert streamed[1] == whole[1], f"runs differ at chunk {size}"
        assert streamed[0] == whole[0], f"spans differ at chunk {size}"


def nested() -> list[dict[str, Any]]:
    t = Trace()
    run = t.start("runWith")
    agent = t.start("agent", run, agentId="planner", callId="root/agent:planner:0")
    generation = t.start("generation", agent, generationId=0)
    loop = t.start("promptAgent", generation)
    turn = t.start("turn", loop, step=0, callId="root/agent:planner:0/prompt:planner:0")
    call = t.start("model:call", turn, adapterId="scripted")
    t.point("budget:update", call, delta={"totalTokens": 3})
    t.end(call, success=True, usage={"promptTokens": 2, "completionTokens": 1})
    t.end(turn, success=True, contentHash="h" * 64, cache=False)
    tools = t.start("tools:execute", loop, toolNames=["search", "fetch"])
    t.point("sys:log", tools, span=tools, message="retrying fetch")
    t.end(tools, success=False, error={"name": "ToolError", "message": "fetch timed out"})
    t.end(loop, success=True)
    t.end(generation, success=True, memory={"k": 1})
    t.end(agent, success=True)
    t.point("sys:log", run, message="all done", level="info")
    t.end(run, success=True)
    return t.events


def awkward() -> list[dict[str, Any]]:
    """Everything a chunk boundary can split, in one trace, plus a second run interleaved with it."""
    t, other = Trace(), Trace()
    run = t.start("runWith")
    side = other.start("agent", agentId="side")
    # A log line whose span id then starts a span of its own, whose start is sent twice.
    t.point("sys:log", run, span="0123456789abcdef", message="before its span starts")
    t.point("custom:span:start", run, span="0123456789abcdef", name="late start")
    t.events.append(dict(t.events[-1]))
    t.point("custom:span:end", run, span="0123456789abcdef", name="late start", success=True)
    orphan = t.start("agent", "feedfeedfeedfeed", agentId="orphan")  # its parent comes later
    t.point("budget:update", orphan, delta={"totalTokens": 1})
    t.end(orphan, success=False, error="boom")
    t.point("parent:late", run, span="feedfeedfeedfeed")
    t.point("a:b", "2", span="1")  # a parent cycle, across chunks
    other.point("sys:log", side, message="from the other run")
    t.point("a:b", "1", span="2")
    t.point("agent:end", run, span="cafecafecafecafe", agentId="cut", success=True)  # no start
    for index in range(6):
        t.end(t.start("turn", run, step=index))
    still = t.start("agent", run, agentId="still running")
    t.end(t.start("turn", still))
    t.end(run, success=True)
    other.end(side)
    return sorted(t.events + other.events, key=lambda event: event["timestamp"])


def test_a_nested_run_at_every_chunk_size(tmp_path: Path) -> None:
    events = nested()
    assert_same_at_every_chunk(tmp_path, "nested", events, [1, 2, 3, 5, 8, len(events) - 1])


def test_what_a_chunk_boundary_can_split_at_every_chunk_size(tmp_path: Path) -> None:
    events = awkward()
    assert_same_at_every_chunk(tmp_path, "awkward", events, [1, 2, 3, 4, 5, 7, 11, len(events) - 1])


def outlived() -> tuple[Trace, str]:
    """A run whose agent ends while its prompt loop goes on; and the loop's span id."""
    t = Trace()
    run = t.start("runWith")
    agent = t.start("agent", run, agentId="ends early")
    loop = t.start("promptAgent", agent)
    t.end(agent, success=True)
    for step in range(3):
        t.end(t.start("turn", loop, step=step))
    t.end(loop, success=True)
    t.end(run, success=True)
    return t, loop


def test_a_loop_that_outlives_its_agent_at_every_chunk_size(tmp_path: Path) -> None:
    """Ends out of order: a turn after its agent's end is still the agent's child in the frame tree,
    counted under it though the agent was stored a chunk before."""
    t, _ = outlived()
    assert_same_at_every_chunk(tmp_path, "outlived", t.events, [1, 2, 3, 4, 5, len(t.events) - 1])


def test_a_loop_that_outlives_its_agent_is_placed_by_the_stream_not_walked_again(tmp_path: Path) -> None:
    """At whatever chunk its agent starts and ends in while the loop stays open, the loop is placed under
    the agent the chunk stored: its run is not left for `fix_places` to walk again (a whole run)."""
    t, loop = outlived()
    for size in range(2, len(t.events)):
        store = Store(tmp_path / f"outlived-{size}.duckdb")
        try:
            with store.transaction() as conn:
                stage(conn, t.events)
                _touch_every_trace(conn)
                derive_stream.derive_new(conn, 0, len(t.events), size=size)
                placed = conn.execute("SELECT depth FROM spans WHERE span_id = ?", [loop]).fetchall()
        finally:
            store.close()
        assert placed == [(2,)], f"chunks of {size}"


def test_a_load_over_the_chunk_fits_a_small_memory_limit_in_chunks_sized_to_it(tmp_path: Path) -> None:
    """1.1M events at 320MiB: in chunks of a million DuckDB ran out of memory; in chunks of 312,500
    (a million a GiB) the load fits, its frame tree whole."""
    generated = generate(tmp_path / "big.jsonl", events=1_100_000, seed=3)
    store = Store(tmp_path / "small.duckdb", memory_limit="320MiB")
    try:
        with store.writer() as conn:
            assert derive_stream.chunk_for(conn) == 312_500
        loaded = load_file(store, generated.path)
        assert loaded.events == 1_100_000
        tree = store.query(
            "SELECT count(*) FILTER (WHERE kind = 'agent'), count(*) FILTER (WHERE depth = 0), "
            "count(*) FILTER (WHERE status = 'running') FROM spans"
        )
    finally:
        store.close()
    # Every worker's agent and the orchestrator, under the one root; nothing left open.
    assert tree == [(generated.workers + 1, 1, 0)]


def test_the_benchmark_trace_with_agents_running_across_chunks(tmp_path: Path) -> None:
    generated = generate(tmp_path / "gen.jsonl", events=3000, seed=11)
    events = [orjson.loads(line) for line in generated.path.read_bytes().splitlines()]
    assert_same_at_every_chunk(tmp_path, "gen", events, [97, 500, 2999])


@pytest.mark.parametrize("scenario", ["nested", "failure", "zombie"])
def test_traces_of_the_typescript_library(tmp_path: Path, scenario: str) -> None:
    path = CORPUS / "rejelly" / f"{scenario}.trace.jsonl"
    events = [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
    assert_same_at_every_chunk(tmp_path, scenario, events, [1, 5])


def test_shuffled_runs_out_of_time_order(tmp_path: Path) -> None:
    """Events in no order at all: children before parents, ends before starts, runs interleaved."""
    events = nested() + awkward()
    random.Random(4).shuffle(events)
    assert_same_at_every_chunk(tmp_path, "shuffled", events, [3, 8])


def _touch_every_trace(conn: duckdb.DuckDBPyConnection) -> None:
    """The table `derive.refresh` makes before a chunked derive: every stored trace, numbered."""
    conn.execute(
        "CREATE TEMP TABLE touched_traces AS "
        "SELECT trace_id, row_number() OVER (ORDER BY trace_id) AS trace_no FROM (SELECT DISTINCT trace_id FROM events)"
    )


def test_a_chunk_carries_the_spans_open_at_its_end_not_the_spans_made(tmp_path: Path) -> None:
    """What a chunk hands to the next (the memory it needs beyond its own events) stays small."""
    generated = generate(tmp_path / "gen.jsonl", events=4000, seed=5)
    events = [orjson.loads(line) for line in generated.path.read_bytes().splitlines()]
    store = Store(tmp_path / "carry.duckdb")
    try:
        with store.transaction() as conn:
            stage(conn, events)
            _touch_every_trace(conn)
            streamed = derive_stream.derive_new(conn, 0, len(events), size=200)
            conn.execute("DROP TABLE touched_traces")
            stored = conn.execute(f"SELECT count(*) FILTER (WHERE {SHOWN}), count(*) FROM spans").fetchall()[0]
    finally:
        store.close()
    # The spans made, as a run counts them: those its page shows (not instants, loops, model calls).
    assert streamed.spans == stored[0] > 1000
    assert stored[1] > streamed.spans
    assert streamed.chunks == 4000 // 200
    # 16 workers run at once, each with at most its agent, generation, loop, and a turn with its model
    # call or a tool batch open, under the run, the orchestrator and its generation: whatever the size.
    assert 16 <= streamed.most_open <= 3 + 16 * 5


def test_ids_with_gaps_are_chunked_by_events_not_by_ids(tmp_path: Path) -> None:
    """An OTLP file's lines are numbered millions of ids apart: a chunk still holds `size` events,
    and the spans are those of a derive at once."""
    generated = generate(tmp_path / "gen.jsonl", events=4000, seed=6)
    events = [orjson.loads(line) for line in generated.path.read_bytes().splitlines()]
    store = Store(tmp_path / "gaps.duckdb")
    try:
        with store.transaction() as conn:
            stage(conn, events, gap=1000)
            _touch_every_trace(conn)
            streamed = derive_stream.derive_new(conn, 0, 1000 * len(events), size=200)
            derive_stream.fix_places(conn)
            conn.execute("DROP TABLE touched_traces")
        spans = store.query(
            f"SELECT {_SPAN_COLUMNS.replace('start_event_id, end_event_id, ', '')} FROM spans ORDER BY 1, 2"
        )
    finally:
        store.close()
    assert streamed.chunks == 4000 // 200
    whole = derived(tmp_path, "dense", events, 10**9)[0]
    assert spans == [row[:14] + row[16:] for row in whole]
