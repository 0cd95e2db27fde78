"""The run page of runs on real models: tokens and cost as money, rolled up per agent, generation and
run; a running turn's answer so far, until the turn ends."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from devtool.store import Store, append_events
from devtool.web import create_app
from tests.conftest import Trace
from tests.web_runs import html, one

HX = {"HX-Request": "true"}


@pytest.fixture
def client(store: Store) -> Iterator[TestClient]:
    with TestClient(create_app(store)) as client:
        yield client


def turn(t: Trace, parent: str, step: int, prompt: int, completion: int, micro_usd: float | None) -> str:
    span = t.start("turn", parent, step=step, messages=[{"role": "user", "content": f"step {step}"}])
    call = t.start("model:call", span, adapterId="gpt-4.1-mini", provider="openai")
    usage = {"promptTokens": prompt, "completionTokens": completion, "totalTokens": prompt + completion}
    t.end(call, success=True, usage=usage, costs=None if micro_usd is None else {"micro_usd": micro_usd})
    t.end(span, success=True, message={"role": "assistant", "content": f"answer {step}"})
    return span


@pytest.fixture
def team(store: Store) -> dict[str, Any]:
    """A lead (one priced turn) over a worker on a priced model and one on a model with no price."""
    t = Trace()
    spans: dict[str, Any] = {"trace": t.trace_id}
    root = spans["root"] = t.start("runWith", agentId="")
    lead = spans["lead"] = t.start("agent", root, agentId="lead")
    generation = spans["generation"] = t.start("generation", lead, agentId="lead", generationId=0)
    spans["lead-turn"] = turn(t, generation, 0, 1200, 300, 955)
    for name, micro_usd in (("priced", 12_000), ("local", None)):
        worker = spans[name] = t.start("agent", generation, agentId=f"worker-{name}")
        turn(t, worker, 0, 10_000, 2_000, micro_usd)
        t.end(worker, success=True)
    t.end(generation, success=True)
    t.end(lead, success=True)
    t.end(root, success=True)
    append_events(store, t.events)
    return spans


def usage_of(client: TestClient, trace: str, span: str) -> dict[str, str]:
    """The tokens and cost facts the detail of `span` asks for once shown, as text."""
    page = html(client.get(f"/runs/{trace}?span={span}").text)
    lazy = one(page, "#detail .usage")
    assert lazy.attributes["hx-trigger"] == "load"
    fragment = html(client.get(lazy.attributes["hx-get"] or "", headers=HX).text)
    facts = {dt.text(strip=True): dd for dt, dd in zip(fragment.css("dt"), fragment.css("dd"), strict=True)}
    return {name: dd.text(separator=" ", strip=True) for name, dd in facts.items()}


def test_usage_rolls_up_per_agent_generation_and_run_as_money(client: TestClient, team: dict[str, Any]) -> None:
    trace = team["trace"]
    everything = {
        "tokens": "25,500 (21,200 in, 4,300 out · 3 model calls)",
        "cost": "$0.0130 + 1 call with no price",
    }
    assert usage_of(client, trace, team["root"]) == everything
    assert usage_of(client, trace, team["lead"]) == everything
    assert usage_of(client, trace, team["generation"]) == everything
    assert usage_of(client, trace, team["priced"]) == {
        "tokens": "12,000 (10,000 in, 2,000 out · 1 model call)",
        "cost": "$0.0120",
    }
    assert usage_of(client, trace, team["local"])["cost"].startswith("— (no price for its model")
    # A turn shows its own at once; the run's raw metrics JSON is gone from the root's detail.
    page = html(client.get(f"/runs/{trace}?span={team['lead-turn']}").text)
    assert one(page, "#detail dd.cost").text(strip=True) == "$0.000955"
    root = client.get(f"/runs/{trace}?span={team['root']}").text
    assert "micro_usd" not in root
    assert "µ$" not in root


def test_the_header_and_the_runs_list_show_the_runs_cost(client: TestClient, team: dict[str, Any]) -> None:
    header = html(client.get(f"/runs/{team['trace']}/header", headers=HX).text)
    assert one(header, ".run-cost").text(separator=" ", strip=True) == "$0.0130 + 1 unpriced call"
    assert one(header, ".run-cost").attributes["title"] == "12,955 micro-dollars"
    runs = html(client.get("/").text)
    cell = one(runs, f'tr[data-trace-id="{team["trace"]}"] .run-cost')
    assert cell.text(strip=True) == "$0.0130+"
    assert cell.attributes["title"] == "1 model call with no price: not in this total"


def streaming_run(store: Store, *, ended: bool) -> tuple[str, str]:
    """A run whose turn streamed two progress events (and, if `ended`, then ended); its trace and turn."""
    t = Trace()
    agent = t.start("agent", agentId="planner")
    span = t.start("turn", agent, step=0, messages=[{"role": "user", "content": "plan a day"}])
    t.point("turn:progress", agent, span=span, callId="root/agent:planner:0/turn:m:0", text="08:00 coffee")
    t.point(
        "turn:progress",
        agent,
        span=span,
        callId="root/agent:planner:0/turn:m:0",
        text="08:00 coffee, 09:00 <b>tram</b>",
    )
    if ended:
        t.end(span, success=True, message={"role": "assistant", "content": "08:00 coffee, 09:00 tram, 10:00 castle."})
        t.end(agent, success=True)
    append_events(store, t.events)
    return t.trace_id, span


def test_a_running_turn_shows_its_answer_so_far_and_asks_again_on_live_messages(
    client: TestClient, store: Store
) -> None:
    trace, span = streaming_run(store, ended=False)
    page = html(client.get(f"/runs/{trace}?span={span}").text)
    answer = one(page, "#detail #turn-answer")
    assert "streaming" in (answer.attributes["class"] or "")
    assert one(answer, ".content.partial").text() == "08:00 coffee, 09:00 <b>tram</b>"  # the newest, escaped
    # On each live message, and on each derive: the one that ends the turn comes after its last events.
    assert answer.attributes["hx-trigger"] == "sse:events, sse:spans"
    assert answer.attributes["hx-get"] == f"/runs/{trace}/spans/{span}/answer"
    assert one(page, "#detail-status").text() == "running"
    assert one(page, "#run-live").attributes["sse-connect"].startswith(f"/runs/{trace}/live")


def test_once_the_turn_ends_its_answer_is_the_whole_message_and_the_status_follows(
    client: TestClient, store: Store
) -> None:
    trace, span = streaming_run(store, ended=True)
    fragment = html(client.get(f"/runs/{trace}/spans/{span}/answer", headers=HX).text)
    answer = one(fragment, "#turn-answer")
    assert "streaming" not in (answer.attributes["class"] or "")
    assert "hx-trigger" not in answer.attributes
    assert one(answer, ".content").text() == "08:00 coffee, 09:00 tram, 10:00 castle."
    status = one(fragment, "#detail-status")
    assert (status.text(), status.attributes["hx-swap-oob"]) == ("completed", "true")
    assert client.get(f"/runs/{trace}/spans/no-such-span/answer").status_code == 404
