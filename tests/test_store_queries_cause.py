"""The cause of a failed run (`devtool.store.queries.cause`): the chain its failure came up through, the
failures caught on the way, the turns whose answers were refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from devtool.demo import failing
from devtool.store import Store, load_file
from devtool.store.errors import NotFoundError
from devtool.store.queries.cause import NoFailure, run_cause, run_faults
from devtool.store.queries.navigation import search_spans
from tests.conftest import Trace
from tests.web_runs import record


def _names(store: Store, trace_id: str, spans: list[str] | tuple[str, ...]) -> list[str]:
    rows = dict(store.query("SELECT span_id, name FROM spans WHERE trace_id = ?", [trace_id]))
    return [rows[span] for span in spans]


def _failed(message: str, name: str = "Error") -> dict[str, Any]:
    return {"success": False, "error": {"name": name, "message": message}}


def test_the_demos_failed_run_ends_in_fallbacks_refused_answer(store: Store, tmp_path: Path) -> None:
    trace = record(store, tmp_path, failing.main, name="release-check")
    cause = run_cause(store, trace)

    assert _names(store, trace, [step.span_id for step in cause.chain]) == [
        "runWith", "release-checker", "generation 0", "fallback", "generation 0", "turn 2"
    ]  # fmt: skip
    assert cause.to_json()["chain"] == [step.span_id for step in cause.chain]
    assert cause.to_json()["error"] == {
        "name": "PromptError",
        "message": "the model's answer did not match the schema after 3 attempts: $.healthy must be boolean",
    }
    assert cause.call_id == "root/agent:release-checker:0/agent:fallback:0/turn:demo-model:2"
    assert cause.attempt_error == "$.healthy must be boolean"

    faults = run_faults(store, trace)
    # The prober's failure and its probe tool's were caught: handled, not on the chain.
    assert sorted(_names(store, trace, sorted(faults.handled))) == ["probe", "prober"]
    assert not faults.handled & {step.span_id for step in cause.chain}
    # Fallback's three turns were answered and refused: failed attempts, each with why.
    refused = sorted(faults.attempts, key=list(faults.errors).index)
    assert _names(store, trace, refused) == ["turn 0", "turn 1", "turn 2"]
    assert set(faults.attempts.values()) == {"$.healthy must be boolean"}
    # Where failures began, in time order: the prober's own raise, its probe, the three refused turns.
    assert _names(store, trace, faults.errors) == ["generation 0", "probe", "turn 0", "turn 1", "turn 2"]


def _parallel_failure(store: Store, tmp_path: Path) -> tuple[str, dict[str, str]]:
    """A lead whose two parallel workers fail: `a` first, with what the lead fails with (the gather
    raises the first failure), `b` after it with another error, which nothing waits for."""
    t = Trace()
    root = t.start("runWith", callId="root")
    lead = t.start("agent", root, agentId="lead", callId="root/agent:lead:0")
    a = t.start("agent", lead, agentId="a", callId="root/agent:lead:0/agent:a:0")
    b = t.start("agent", lead, agentId="b", callId="root/agent:lead:0/agent:b:0")
    tool = t.start("tools:execute", a, agentId="a", callId="root/agent:lead:0/agent:a:0/tool:fetch:0")
    t.end(tool, **_failed("fetch: 503 from upstream", "ToolError"))
    t.end(a, **_failed("fetch: 503 from upstream", "ToolError"))
    t.end(b, **_failed("b gave up", "RuntimeError"))
    t.end(lead, **_failed("worker failed: fetch: 503 from upstream", "WorkerError"))
    t.end(root, **_failed("worker failed: fetch: 503 from upstream", "WorkerError"))
    trace = load_file(store, t.write(tmp_path / "parallel.jsonl")).traces[0]
    return trace, {"root": root, "lead": lead, "a": a, "b": b, "tool": tool}


def test_the_chain_follows_the_failure_that_propagated_not_the_last_to_fail(store: Store, tmp_path: Path) -> None:
    trace, span = _parallel_failure(store, tmp_path)
    cause = run_cause(store, trace)
    # `b` failed last, but the lead failed with `a`'s error (wrapped): the chain goes down through `a`.
    assert [step.span_id for step in cause.chain] == [span["root"], span["lead"], span["a"], span["tool"]]
    assert cause.span_id == span["tool"]
    # The error is the innermost span's: what the lead wrapped.
    assert cause.error_name == "ToolError"
    assert cause.error_message == "fetch: 503 from upstream"
    faults = run_faults(store, trace)
    assert faults.handled == {span["b"]}
    assert faults.errors == (span["b"], span["tool"])


def test_a_run_whose_failures_were_all_handled_has_no_cause(store: Store, tmp_path: Path) -> None:
    t = Trace()
    root = t.start("runWith", callId="root")
    agent = t.start("agent", root, agentId="lead", callId="root/agent:lead:0")
    tool = t.start("tools:execute", agent, agentId="lead", callId="root/agent:lead:0/tool:probe:0")
    t.end(tool, **_failed("timed out"))
    t.end(agent, success=True, result="answered without the probe")
    t.end(root, success=True)
    trace = load_file(store, t.write(tmp_path / "handled.jsonl")).traces[0]

    faults = run_faults(store, trace)
    assert faults.cause is None
    assert faults.handled == {tool}
    assert faults.errors == (tool,)
    with pytest.raises(NoFailure, match="did not fail"):
        run_cause(store, trace)
    with pytest.raises(NotFoundError):
        run_faults(store, "f" * 32)


def test_a_big_keyed_run_is_answered_the_same(store: Store, tmp_path: Path) -> None:
    """A run of more than `LOAD_KEYED_EVENTS` events (keyed at load) whose one failure is deep inside."""
    t = Trace()
    root = t.start("runWith", callId="root")
    lead = t.start("agent", root, agentId="lead", callId="root/agent:lead:0")
    for index in range(13_000):
        t.span("tools:execute", lead, agentId="lead", callId=f"root/agent:lead:0/tool:step:{index}")
    worker = t.start("agent", lead, agentId="worker", callId="root/agent:lead:0/agent:worker:0")
    deep = t.start("tools:execute", worker, agentId="worker", callId="root/agent:lead:0/agent:worker:0/tool:x:0")
    t.end(deep, **_failed("disk full", "OSError"))
    t.end(worker, **_failed("disk full", "OSError"))
    for index in range(13_000, 26_000):
        t.span("tools:execute", lead, agentId="lead", callId=f"root/agent:lead:0/tool:step:{index}")
    t.end(lead, **_failed("disk full", "OSError"))
    t.end(root, **_failed("disk full", "OSError"))
    trace = load_file(store, t.write(tmp_path / "big.jsonl")).traces[0]
    assert store.query("SELECT count(*) FROM keyed_runs WHERE trace_id = ?", [trace])[0][0] == 1

    # Its failed spans are kept with its keys, names and callIds with them: the cause reads them there.
    kept = store.query("SELECT span_id, name, call_id FROM span_failures ORDER BY start_ts")
    assert [span for span, _, _ in kept] == [root, lead, worker, deep]
    cause = run_cause(store, trace)
    assert [step.span_id for step in cause.chain] == [root, lead, worker, deep]
    assert [(step.name, step.call_id) for step in cause.chain] == [(name, call) for _, name, call in kept]
    assert cause.call_id == "root/agent:lead:0/agent:worker:0/tool:x:0"
    assert (cause.error_name, cause.error_message) == ("OSError", "disk full")
    assert search_spans(store, trace, "tool:x:0")[0].span_id == deep
