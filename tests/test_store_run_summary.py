"""Run summaries updated from what an append changed equal those counted from all the run's events.

The property: after any sequence of appended batches (cut anywhere, out of order, sent again by a
retrying exporter, several runs at once, derived after each batch or several at a time), the spans
and the run summaries the live derive left equal a full derive of the same stored events, column
for column. The full derive runs inside a transaction that is rolled back, over the very events the
appends stored. The runs are native ones (agents, turns, model calls with tokens and costs, tools,
log lines, errors, spans left running) and OpenTelemetry ones, mapped by the OTLP mapping and sent
as an exporter sends them: each span when it ends, children before their parents.
"""

from __future__ import annotations

import math
import random
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from devtool.formats import decode_json_request, otlp_events
from devtool.store import Store, append_events, derive
from devtool.store.queries import get_run
from tests import otlp_factory
from tests.conftest import Trace, running_run

_SPAN_COLUMNS = (
    "trace_id, span_id, parent_span_id, kind, instant, name, agent_id, call_id, start_ts, end_ts, status, "
    "error, content_hash, cache, start_event_id, end_event_id, events, depth, frame_parent_id, frame_children"
)
_KINDS = ("agent", "generation", "promptAgent", "turn", "model:call", "tools:execute", "custom:span")


def native_run(rng: random.Random) -> list[dict[str, Any]]:
    """A run of nested spans of every kind the summary counts, some failed, some left running."""
    t = Trace()
    root = t.start("runWith", name="job")
    _grow(t, rng, [root], root, 1)
    if rng.random() < 0.7:
        t.end(root, success=rng.random() < 0.8)
    return t.events


def _grow(t: Trace, rng: random.Random, seen: list[str], parent: str, depth: int) -> None:
    """Up to 3 spans under `parent`, each with its own subtree; `seen` lists the spans made so far."""
    for _ in range(rng.randint(0, 3) if depth < 5 else 0):
        kind = rng.choice(_KINDS)
        fields: dict[str, Any] = {}
        if kind == "agent":
            fields["agentId"] = rng.choice(["alpha", "beta", "gamma delta"])
        if kind == "tools:execute":
            fields["toolNames"] = rng.sample(["search", "fetch", "calc"], rng.randint(1, 3))
        span = t.start(kind, parent, **fields)
        if rng.random() < 0.3:
            # A log line of the span itself, naming its parent, or (a confused logger) another span or
            # none: the first of the span's events when it arrives before the start, so its parent then.
            t.point("sys:log", rng.choice([parent, parent, "", *seen]), span=span, message="inside")
        seen.append(span)
        if rng.random() < 0.2:
            t.point("budget:update", span, delta={"totalTokens": 3})
        if rng.random() < 0.1:
            t.point("error", span, error={"message": "boom"})
        _grow(t, rng, seen, span, depth + 1)
        if rng.random() < 0.1:
            continue  # left running
        end: dict[str, Any] = {"success": rng.random() < 0.8}
        if not end["success"]:
            end["error"] = {"name": "Failure", "message": "it failed"}
        if kind == "model:call":
            end["usage"] = {"promptTokens": rng.randint(1, 50), "completionTokens": rng.randint(1, 20)}
            if rng.random() < 0.7:
                end["costs"] = {"micro_usd": rng.choice([0.5, 1.25, 30.0, 0.1])}
        t.end(span, **end)


def otlp_run(rng: random.Random, trace_id: str) -> list[dict[str, Any]]:
    """An OpenTelemetry agent run (agent, chats with tokens, tools), its spans in the order they end:
    children before their parents, the root last (or never, when the exporter is cut short)."""
    spans: list[dict[str, Any]] = []
    root = otlp_factory.span_id()
    agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": rng.choice(["planner", "writer"])}
    for n in range(rng.randint(1, 6)):
        parent = root if rng.random() < 0.8 else otlp_factory.span_id()  # or under a span never sent
        if rng.random() < 0.7:
            attributes = {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": rng.choice(["gpt-4.1-mini", "an-unpriced-model"]),
                "gen_ai.usage.input_tokens": rng.randint(1, 90),
                "gen_ai.usage.output_tokens": rng.randint(1, 30),
            }
            name = "chat"
        else:
            attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": rng.choice(["a", "b"])}
            name = "execute_tool"
        status = {"code": 2, "message": "bad"} if rng.random() < 0.2 else None
        spans.append(
            otlp_factory.span(name, attributes, trace=trace_id, parent=parent, start_ms=n * 20 + 1, status=status)
        )
    if rng.random() < 0.8:
        spans.append(otlp_factory.span("invoke_agent", agent, trace=trace_id, sid=root, duration_ms=200))
    return list(otlp_events(decode_json_request(otlp_factory.request(*spans)).spans))


def batches(rng: random.Random, events: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """`events` cut into batches at random, some moved out of order, some batches sent twice."""
    events = list(events)
    for _ in range(rng.randint(0, 3)):  # an event late: an end before its start, a parent after a child
        i, j = rng.randrange(len(events)), rng.randrange(len(events))
        events[i], events[j] = events[j], events[i]
    cuts = sorted(rng.sample(range(1, len(events)), min(len(events) - 1, rng.randint(0, 6))))
    parts = [events[a:b] for a, b in zip([0, *cuts], [*cuts, len(events)], strict=True)]
    sent: list[list[dict[str, Any]]] = []
    for part in parts:
        sent.append(part)
        if rng.random() < 0.25:  # a retry: the same batch again, or a part of an earlier one with it
            earlier = rng.choice(sent)
            sent.append(earlier[: rng.randint(1, len(earlier))] + (part if rng.random() < 0.5 else []))
    return sent


def stored(store: Store) -> tuple[list[tuple[Any, ...]], list[dict[str, Any]]]:
    spans = store.query(f"SELECT {_SPAN_COLUMNS} FROM spans ORDER BY trace_id, span_id")
    cursor = store.reader()
    try:
        rows = cursor.execute("SELECT * FROM runs ORDER BY trace_id").fetchall()
        names = [column[0] for column in cursor.description or []]
    finally:
        cursor.close()
    return spans, [dict(zip(names, row, strict=True)) for row in rows]


def derived_whole(store: Store) -> tuple[list[tuple[Any, ...]], list[dict[str, Any]]]:
    """The spans and runs a full derive makes of the stored events (then rolled back)."""
    with store.writer() as conn:
        conn.execute("BEGIN TRANSACTION")
        try:
            conn.execute("DELETE FROM spans; DELETE FROM runs")
            derive.refresh(conn, 0)
            spans = conn.execute(f"SELECT {_SPAN_COLUMNS} FROM spans ORDER BY trace_id, span_id").fetchall()
            rows = conn.execute("SELECT * FROM runs ORDER BY trace_id").fetchall()
            names = [column[0] for column in conn.description or []]
        finally:
            conn.execute("ROLLBACK")
    return spans, [dict(zip(names, row, strict=True)) for row in rows]


def assert_same_runs(live: list[dict[str, Any]], whole: list[dict[str, Any]]) -> None:
    assert [run["trace_id"] for run in live] == [run["trace_id"] for run in whole]
    for got, want in zip(live, whole, strict=True):
        # A sum of costs added batch by batch may differ from one sum in its last bits (float addition).
        cost, expected = got.pop("cost_micro_usd"), want.pop("cost_micro_usd")
        assert (cost is None) == (expected is None), got["trace_id"]
        assert cost is None or math.isclose(cost, expected, rel_tol=1e-12), (cost, expected)
        assert got == want


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), derive_each=st.floats(0, 1))
def test_appended_batches_derive_as_the_whole(seed: int, derive_each: float) -> None:
    rng = random.Random(seed)
    runs = [native_run(rng), otlp_run(rng, f"{rng.getrandbits(128):032x}")]
    if rng.random() < 0.5:
        runs.append(native_run(rng))
    # Runs streaming at once: their batches interleave, each run's in its own order.
    queues = [batches(rng, run) for run in runs]
    sends = []
    while any(queues):
        queue = rng.choice([q for q in queues if q])
        sends.append(queue.pop(0))
    with tempfile.TemporaryDirectory() as folder:
        store = Store(Path(folder) / "live.duckdb")
        try:
            for batch in sends:
                # Derived after this batch, or left in the backlog with the next ones (several runs at once).
                append_events(store, batch, derive=rng.random() < derive_each)
            store.derive_backlog()
            live = stored(store)
            whole = derived_whole(store)
            assert live[0] == whole[0]
            assert_same_runs(live[1], whole[1])
        finally:
            store.close()


def test_a_run_grows_by_deltas_and_is_counted_again_when_its_agents_or_roots_change(store: Store) -> None:
    """Turns and tools add to the stored counts (a count off by 100 stays off: nothing recounted it);
    an agent's or a root's change counts the run again from its spans."""
    t = Trace()
    run = t.start("runWith", name="job")
    agent = t.start("agent", run, agentId="alpha")
    append_events(store, t.events)
    assert (get_run(store, t.trace_id).name, get_run(store, t.trace_id).status) == ("alpha", "running")
    with store.transaction() as conn:
        conn.execute("UPDATE runs SET prompts = prompts + 100")
    sent = len(t.events)
    for step in range(3):
        turn = t.start("turn", agent, step=step)
        t.end(turn, success=step != 1, error=None if step != 1 else "bad turn")
        t.end(t.start("tools:execute", agent, toolNames=["search", "fetch"]))
        append_events(store, t.events[sent:])
        sent = len(t.events)
    summary = get_run(store, t.trace_id)
    assert (summary.spans, summary.prompts, summary.tools, summary.failed, summary.running) == (8, 103, 6, 1, 2)
    t.end(agent, success=True)
    t.end(run, success=False)
    append_events(store, t.events[sent:])
    summary = get_run(store, t.trace_id)
    assert (summary.status, summary.prompts, summary.running) == ("failed", 3, 0)
    assert store.query("SELECT depth FROM runs") == [(2,)]
    assert stored(store) == derived_whole(store)


def test_a_run_is_as_deep_as_its_deepest_span_after_that_span_rises(store: Store) -> None:
    """A span first seen by a log line naming a deep parent sits deepest until its start places it higher."""
    t = Trace()
    run = t.start("runWith")
    deep = t.start("custom:span", t.start("custom:span", t.start("custom:span", run)))
    risen = t.start("custom:span", run)
    t.point("sys:log", deep, span=risen, message="logged under the wrong parent")
    append_events(store, [e for e in t.events if e["trace"]["spanId"] != risen] + [t.events[-1]])
    assert store.query("SELECT depth FROM spans WHERE span_id = ?", [risen]) == [(4,)]
    assert store.query("SELECT depth FROM runs") == [(4,)]
    append_events(store, [e for e in t.events if e["type"] == "custom:span:start" and e["trace"]["spanId"] == risen])
    assert store.query("SELECT depth FROM spans WHERE span_id = ?", [risen]) == [(1,)]
    assert store.query("SELECT depth FROM runs") == [(3,)]
    assert stored(store) == derived_whole(store)


def test_a_run_stored_before_migration_9_is_counted_whole_at_its_next_append(store: Store) -> None:
    t, root = running_run(2)
    append_events(store, t.events)
    with store.transaction() as conn:  # as migration 9 leaves a run stored before it
        conn.execute("UPDATE runs SET name_key = NULL, name_span = NULL, prompts = 0")
    sent = len(t.events)
    t.end(t.start("turn", root))
    append_events(store, t.events[sent:])
    assert get_run(store, t.trace_id).prompts == 3  # counted again: the zero did not stay
    assert store.query("SELECT name_span FROM runs") == [(root,)]
    assert stored(store) == derived_whole(store)


def test_a_failed_span_derived_again_and_a_late_orphan_root_move_the_counts_as_a_count_would(store: Store) -> None:
    """A log line after a failed turn's end derives the turn again (it is taken away as it was and
    added as it is: still one failed span), and a finished run that gets a root span whose parent is
    not stored (an exporter's child before its parent) is running again."""
    t = Trace()
    run = t.start("runWith", name="job")
    turn = t.start("turn", run)
    t.end(turn, success=False, error="bad turn")
    t.end(run, success=True)
    append_events(store, t.events)
    assert (get_run(store, t.trace_id).failed, get_run(store, t.trace_id).status) == (1, "completed")
    sent = len(t.events)
    t.point("sys:log", run, span=turn, message="after its end")
    append_events(store, t.events[sent:])
    assert get_run(store, t.trace_id).failed == 1
    assert stored(store) == derived_whole(store)
    sent = len(t.events)
    t.end(t.start("custom:span", "f" * 16))  # its parent is still to come
    append_events(store, t.events[sent:])
    assert get_run(store, t.trace_id).status == "running"
    assert stored(store) == derived_whole(store)
