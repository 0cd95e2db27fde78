"""One span in detail: its row, the events that open and close it, and how many children the tree shows."""

from __future__ import annotations

import pytest

from devtool.store import NotFoundError, Store, append_events
from devtool.store.queries import span_detail
from tests.conftest import Trace


def test_a_span_with_its_start_and_end_events(store: Store) -> None:
    t = Trace()
    agent = t.start("agent", agentId="writer", callId="root/agent:writer:0", props={"topic": "rust"})
    turn = t.start("turn", agent, step=0)
    t.end(turn, success=False, error={"name": "ModelError", "message": "upstream 503"}, contentHash="h1", cache=True)
    t.point("budget:update", turn)
    t.end(agent, success=False, error="gave up", result=None)
    append_events(store, t.events)
    detail = span_detail(store, t.trace_id, agent)
    assert (detail.kind, detail.name, detail.agent_id, detail.call_id) == (
        "agent",
        "writer",
        "writer",
        "root/agent:writer:0",
    )
    assert (detail.status, detail.error, detail.depth, detail.children, detail.events) == ("failed", "gave up", 0, 1, 2)
    assert detail.start_event == t.events[0]
    assert detail.end_event == t.events[-1]
    assert detail.duration_ms == 4
    turn_detail = span_detail(store, t.trace_id, turn)
    # Its one child is an instant (a budget update): the frame tree does not show it.
    assert (turn_detail.error, turn_detail.content_hash, turn_detail.cache, turn_detail.children) == (
        "upstream 503",
        "h1",
        True,
        0,
    )
    assert turn_detail.frame_parent_id == agent


def test_an_instant_span_and_a_running_one(store: Store) -> None:
    t = Trace()
    agent = t.start("agent")
    budget = t.point("budget:update", agent, delta={"totalTokens": 7})
    append_events(store, t.events)
    instant = span_detail(store, t.trace_id, budget)
    assert (instant.instant, instant.start_event, instant.end_event) == (True, t.events[1], None)
    running = span_detail(store, t.trace_id, agent)
    assert (running.status, running.end_ms, running.duration_ms, running.end_event) == ("running", None, None, None)


def test_an_unknown_span(store: Store) -> None:
    with pytest.raises(NotFoundError, match="no span 'x' in run 'y'"):
        span_detail(store, "y", "x")
