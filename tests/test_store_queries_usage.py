"""Tokens and cost rolled up per span and per run, from the model calls' usage and costs."""

from __future__ import annotations

from pathlib import Path

import duckdb
import orjson
import pytest

from devtool.store import Store, append_events, database, load_file
from devtool.store.queries import get_run
from devtool.store.queries.usage import Usage, span_usage
from devtool.store.schema import MIGRATIONS
from tests.conftest import CORPUS, Trace


def call(t: Trace, turn: str, prompt: int, completion: int, micro_usd: float | None, *, success: bool = True) -> None:
    span = t.start("model:call", turn, adapterId="gpt-4.1-mini", provider="openai")
    if success:
        usage = {"promptTokens": prompt, "completionTokens": completion, "totalTokens": prompt + completion}
        costs = None if micro_usd is None else {"micro_usd": micro_usd}
        t.end(span, success=True, usage=usage, costs=costs)
    else:
        t.end(span, success=False, error={"name": "ModelError", "message": "HTTP 500"})


def team() -> tuple[Trace, dict[str, str]]:
    """A lead (one turn) with two workers: one priced turn and a failed call; one turn of an unpriced model."""
    t = Trace()
    spans: dict[str, str] = {}
    root = spans["root"] = t.start("runWith")
    lead = spans["lead"] = t.start("agent", root, agentId="lead")
    generation = spans["generation"] = t.start("generation", lead, agentId="lead")
    prompt = t.start("promptAgent", generation)
    turn = spans["lead-turn"] = t.start("turn", prompt)
    call(t, turn, 100, 10, 120)
    t.end(turn)
    t.end(prompt)
    for name, micro_usd in (("priced", 300.0), ("local", None)):
        worker = spans[name] = t.start("agent", generation, agentId="worker")
        turn = t.start("turn", worker)
        call(t, turn, 1000, 200, micro_usd)
        if name == "priced":
            call(t, turn, 0, 0, None, success=False)  # a failed request used nothing and is not unpriced
        t.end(turn)
        cached = t.start("turn", worker)
        t.end(cached, cache=True)  # served from a snapshot: no model call, no cost
        t.end(worker)
    t.end(generation)
    t.end(lead)
    t.end(root)
    return t, spans


def test_usage_rolls_up_per_agent_generation_and_run_and_unknown_prices_stay_unknown(store: Store) -> None:
    t, spans = team()
    append_events(store, t.events)

    def usage(name: str) -> Usage:
        return span_usage(store, t.trace_id, spans[name])

    assert usage("lead-turn") == Usage(1, 100, 10, 120.0, 0)
    assert usage("priced") == Usage(1, 1000, 200, 300.0, 0)
    assert usage("local") == Usage(1, 1000, 200, None, 1)
    everything = Usage(3, 2100, 410, 420.0, 1)
    assert usage("generation") == usage("lead") == usage("root") == everything
    assert everything.total_tokens == 2510
    summary = get_run(store, t.trace_id)
    assert (summary.prompt_tokens, summary.completion_tokens) == (2100, 410)
    assert (summary.cost_micro_usd, summary.unpriced_calls) == (420.0, 1)
    assert span_usage(store, t.trace_id, "no-such-span") == Usage()


def test_a_sibling_running_at_the_same_time_is_not_counted(store: Store) -> None:
    t = Trace()
    root = t.start("agent", agentId="lead")
    first = t.start("agent", root, agentId="worker")
    second = t.start("agent", root, agentId="worker")
    for worker, cost in ((first, 10.0), (second, 20.0), (first, 30.0)):
        turn = t.start("turn", worker)
        call(t, turn, 5, 5, cost)
        t.end(turn)
    t.end(second)
    t.end(first)
    t.end(root)
    append_events(store, t.events)
    assert span_usage(store, t.trace_id, first).micro_usd == 40.0
    assert span_usage(store, t.trace_id, second).micro_usd == 20.0
    assert span_usage(store, t.trace_id, root) == Usage(3, 15, 15, 60.0, 0)


def test_a_run_with_no_priced_call_has_no_cost(store: Store) -> None:
    t = Trace()
    agent = t.start("agent")
    turn = t.start("turn", agent)
    call(t, turn, 10, 5, None)
    t.end(turn)
    t.end(agent)
    append_events(store, t.events)
    summary = get_run(store, t.trace_id)
    assert (summary.cost_micro_usd, summary.unpriced_calls) == (None, 1)
    assert span_usage(store, t.trace_id, agent) == Usage(1, 10, 5, None, 1)


def test_the_typescript_librarys_costs_load_as_they_are(store: Store) -> None:
    load_file(store, CORPUS / "rejelly" / "simple.trace.jsonl")
    events = [orjson.loads(line) for line in (CORPUS / "rejelly" / "simple.trace.jsonl").read_bytes().splitlines()]
    calls = [e for e in events if e["type"] == "model:call:end"]
    summary = get_run(store, calls[0]["trace"]["traceId"])
    assert summary.cost_micro_usd == sum(e["costs"]["micro_usd"] for e in calls)
    assert summary.unpriced_calls == 0


def test_an_older_store_gets_its_costs_when_it_is_opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "old.duckdb"
    monkeypatch.setattr(database, "MIGRATIONS", MIGRATIONS[:3])
    Store(path).close()
    body = {"type": "model:call:end", "costs": {"micro_usd": 955}, "usage": {"promptTokens": 9, "completionTokens": 1}}
    with duckdb.connect(str(path)) as conn:
        conn.execute(
            "INSERT INTO events VALUES (1, 1, 't1', 's1', NULL, 'model:call:end', 1.0, 'a', NULL, NULL, NULL, true, "
            "NULL, NULL, 9, 1, ?)",
            [orjson.dumps(body).decode()],
        )
        conn.execute("INSERT INTO runs VALUES ('t1', 'a', 1, 1, 'completed', 1, 1, 1, 0, 0, 9, 1, 'a', 1, 1)")
    monkeypatch.setattr(database, "MIGRATIONS", MIGRATIONS)
    store = Store(path)
    try:
        assert store.query("SELECT cost_micro_usd FROM events") == [(955.0,)]
        assert store.query("SELECT cost_micro_usd, unpriced_calls FROM runs") == [(955.0, 0)]
    finally:
        store.close()
