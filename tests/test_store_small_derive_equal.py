"""The Python derive of a small whole trace (`store/small_derive.py`) writes, column by column, the rows
the SQL derive writes for the same events in another store: every span, the run summary and the
`unindexed` rows, for each kind of span and event it takes; and where it does not know all of a
trace's events, the SQL derive makes them."""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from devtool.formats import decode_json_request
from devtool.formats.otlp_logs import SpanLogs, decode_json_logs
from devtool.store import Store, store_batch
from devtool.store.event_gate import CheckedEvent, check_events
from devtool.web.otlp_read import gated
from tests.conftest import Trace
from tests.otlp_factory import CORPUS, event, log_record, logs_request, request, span, span_id
from tests.test_store_backlog import index_rows

SMALL = 64


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[tuple[Store, Store]]:
    """A store whose appends derive small traces in Python, and one that derives everything in SQL."""
    python, sql = Store(tmp_path / "python.duckdb"), Store(tmp_path / "sql.duckdb")
    try:
        yield python, sql
    finally:
        python.close()
        sql.close()


def rows(store: Store) -> dict[str, list[tuple[Any, ...]]]:
    """Every row a derive writes, in a fixed order, with its columns by name."""
    return {
        table: [tuple(zip(columns, row, strict=True)) for row in store.query(f"SELECT * FROM {table} ORDER BY ALL")]
        for table, columns in (
            (table, [column for (column,) in store.query(f"SELECT name FROM pragma_table_info('{table}')")])
            for table in ("spans", "runs", "unindexed")
        )
    }


def both(stores: tuple[Store, Store], batches: Sequence[Sequence[CheckedEvent]], *, python: bool = True) -> None:
    """Append `batches` to both stores, the first deriving small whole traces in its append (in Python,
    or with `python=False` in SQL: the fallback), the second leaving them to the SQL derive; the rows equal."""
    mine, reference = stores
    took = [store_batch(mine, batch, stream="otlp", derive_small=SMALL) for batch in batches]
    assert took[-1].derived is not None  # the last batch ends every trace
    assert took[-1].in_python is python
    assert not mine.backlog
    for batch in batches:
        store_batch(reference, batch, stream="otlp", derive_small=0)
        reference.derive_backlog(behind=True)  # as the appender's: the index step is left for later
    reference_rows = rows(reference)
    assert reference_rows["spans"]
    assert reference_rows["unindexed"]
    for table, found in rows(mine).items():
        assert found == reference_rows[table], table
    # The index step after each reads what each derive wrote: the same words and call fingerprints.
    assert mine.index_backlog()
    assert reference.index_backlog()
    for trace in took[-1].derived[1]:
        assert index_rows(mine, trace) == index_rows(reference, trace)


def native(events: list[dict[str, Any]]) -> list[CheckedEvent]:
    return check_events(events)


def otlp(body: Mapping[str, Any], logs: Mapping[str, Any] | None = None) -> list[CheckedEvent]:
    """The events the server stores for an OTLP/JSON request (and the log records sent before it)."""
    held = SpanLogs()
    if logs is not None:
        held.hold(decode_json_logs(logs).records)
    checked, refused = gated(held.attach(decode_json_request(body).spans))
    assert refused == []
    return checked


def agent_run() -> Trace:
    """A native run with a span or event of every kind the DevTool records, nested."""
    t = Trace()
    root = t.start("runWith", entrypoint="main.py")
    agent = t.start("agent", root, agentId="clerk", callId="root/agent:clerk:0")
    prompt = t.start("promptAgent", agent, agentId="clerk")
    turn = t.start("turn", prompt, agentId="clerk", step=0)
    call = t.start("model:call", turn, agentId="clerk", adapterId="openai", contentHash="h1")
    t.point("sys:log", turn, span=call, message="inside the call")  # a point of a start/end pair
    # Its end differs from its start: which one a span's column is taken from shows.
    usage = {"promptTokens": 12, "completionTokens": 3}
    t.end(call, success=True, usage=usage, costs={"micro_usd": 41.5}, contentHash="h2", callId="c1", agentId="clerk2")
    unpriced = t.start("model:call", turn, agentId="clerk", adapterId="openai")
    t.end(unpriced, success=True, usage={"promptTokens": 7, "completionTokens": 1}, cache=True)
    refused = t.start("model:call", turn, agentId="clerk", adapterId="openai")
    t.end(refused, success=False, usage={"promptTokens": 2, "completionTokens": 0})  # not unpriced: failed
    t.end(turn, success=True, usage={"promptTokens": 19, "completionTokens": 4})
    t.end(prompt)
    tools = t.start("tools:execute", agent, agentId="helper", toolNames=["search", "lookup"])
    t.point("sys:log", tools, message="ß" * 250)  # a log line's instant span, named by 200 characters
    t.point("sys:log", tools, message={"not": "text"})  # a message that is no text: named by its type
    t.point("budget:update", agent, message="not a name", spent=3)
    t.point("error", tools, error={"message": "tool failed", "name": "ToolError"})
    t.point("error", agent)  # an error event says nothing else: failed by its type
    t.end(tools, success=False, error="lookup timed out")
    t.span("agent", agent, agentId="auditor")  # a sub-agent: the run's agent ids, its name the outer's
    generation = t.start("generation", agent, generationId=2)
    t.end(generation, error={"name": "Stopped"})
    t.start("custom:span", agent, name="still open")  # never ends: running
    t.span("custom:span", agent, name="a step", usage={"promptTokens": 100, "completionTokens": 9})  # no request
    t.end(agent, success=True)
    t.end(root, success=True)
    return t


def test_every_native_kind_of_span_and_event_derives_alike(stores: tuple[Store, Store]) -> None:
    both(stores, [native(agent_run().events)])


def test_events_arriving_out_of_order_derive_alike(stores: tuple[Store, Store]) -> None:
    events = agent_run().events
    random.Random(7).shuffle(events)  # ends before starts, children before parents
    both(stores, [native(events)])


def test_an_end_without_its_start_a_parent_cycle_and_a_missing_parent_derive_alike(stores: tuple[Store, Store]) -> None:
    t = Trace()
    root = t.start("agent", agentId="a")
    cut = t.start("turn", root)
    t.events.pop()  # the turn's start is cut off: an end alone
    t.end(cut, success=True)
    t.point("sys:log", "ffffffffffffffff", span="eeeeeeeeeeeeeeee", message="a parent in a cycle")
    t.point("sys:log", "eeeeeeeeeeeeeeee", span="ffffffffffffffff", message="and back")
    orphan = t.start("custom:span", "dddddddddddddddd", name="a parent never sent")
    t.span("custom:span", orphan, name="under it")
    t.end(orphan)
    t.end(root)
    both(stores, [native(t.events)])


def test_two_traces_in_one_batch_derive_alike(stores: tuple[Store, Store]) -> None:
    first, second = agent_run(), Trace()
    second.span("custom:span", name="alone")  # a run with no agent: named by its root span
    both(stores, [native(first.events + second.events)])


@pytest.mark.parametrize("body", CORPUS, ids=["genai", "openinference", "legacy"])
def test_each_otlp_convention_derives_alike(stores: tuple[Store, Store], body: dict[str, Any]) -> None:
    both(stores, [otlp(body)])


def test_otlp_genai_operations_errors_span_events_and_logs_derive_alike(stores: tuple[Store, Store]) -> None:
    trace, root, chat, tool = "9" * 32, span_id(), span_id(), span_id()
    genai = {"gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4.1-mini"}
    body = request(
        span(
            "chat gpt-4.1-mini",
            {"gen_ai.operation.name": "chat", **genai, "gen_ai.usage.input_tokens": 9},
            trace=trace,
            sid=chat,
            parent=root,
            start_ms=1,
            kind=3,
        ),
        span("embeddings", {"gen_ai.operation.name": "embeddings", **genai}, trace=trace, parent=root, start_ms=3),
        span("text_completion", {"gen_ai.operation.name": "text_completion", **genai}, trace=trace, parent=root),
        span(
            "execute_tool lookup",
            {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"},
            trace=trace,
            sid=tool,
            parent=root,
            start_ms=5,
            status={"code": 2, "message": "lookup timed out"},
            events=[event("exception", {"exception.type": "TimeoutError", "exception.message": "slow"}, at_ms=6)],
        ),
        span("a plain span", {"http.method": "GET"}, trace=trace, parent=tool, start_ms=6, duration_ms=1),
        span("create_agent helper", {"gen_ai.operation.name": "create_agent"}, trace=trace, parent=root),
        span(
            "invoke_agent clerk",
            {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "clerk"},
            trace=trace,
            sid=root,
            duration_ms=30,
            status={"code": 2},
        ),
    )
    logs = logs_request(
        log_record("gen_ai.user.message", {"content": "1 + 1?"}, trace=trace, sid=chat, at_ms=1),
        log_record("gen_ai.choice", {"index": 0, "message": {"content": "2"}}, trace=trace, sid=chat, at_ms=2),
    )
    both(stores, [otlp(body, logs)])


def test_a_trace_with_a_run_already_is_derived_in_sql(stores: tuple[Store, Store]) -> None:
    """The fallback: a second root of a derived run (its first one's events are not in hand)."""
    t = Trace()
    t.span("agent", agentId="first")
    first = native(t.events)
    t.span("agent", agentId="second")
    both(stores, [first, native(t.events[-2:])], python=False)


def test_a_batch_of_a_new_trace_and_one_with_a_run_is_derived_in_sql(stores: tuple[Store, Store]) -> None:
    done, fresh = Trace(), agent_run()
    done.span("agent", agentId="first")
    first = native(done.events)
    done.span("agent", agentId="again")
    both(stores, [first, native(done.events[-2:] + fresh.events)], python=False)


def test_a_run_with_neither_an_agent_nor_a_root_span_derives_alike(stores: tuple[Store, Store]) -> None:
    """Its span's end says it is a root, its start that it is under a log line: the run is named by its id."""
    t = Trace()
    line = t.point("sys:log", message="first")
    step = t.start("custom:span", line, name="under the log line")
    t.end(step)
    t.events[-1]["trace"]["parentSpanId"] = ""  # its end says it is a root
    both(stores, [native(t.events)])
