"""`/runs/<id>/cause`, `/runs/<id>/find`, the find box and the runs search's snippets, over HTTP from a
real `devtool serve` holding the demo's failed run and a run whose agent said something hostile."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from devtool.demo import failing
from devtool.store import Store
from testkit.served import Served
from tests.conftest import Trace, running_serve
from tests.web_runs import html, one, record

HOSTILE = '<img src=x onerror="alert(1)"> needle <script>alert(2)</script>'


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, dict[str, str]]]:
    folder = tmp_path_factory.mktemp("why")
    store = Store(folder / "made.duckdb")
    failed = record(store, folder, failing.main, name="release-check")
    store.close()
    t = Trace()
    root = t.start("runWith", callId="root")
    turn = t.start("turn", root, callId="root/turn:m:0")
    t.end(turn, success=True, message={"role": "assistant", "content": HOSTILE})
    t.end(root, success=True)
    hostile = t.write(folder / "hostile.jsonl")
    with running_serve(folder / "served.duckdb", str(folder / "release-check.jsonl"), str(hostile)) as server:
        yield server, {"failed": failed, "hostile": t.trace_id, "turn": turn}


def _get(server: Served, path: str, *, accept: str = "application/json") -> tuple[int, str]:
    request = urllib.request.Request(server.url + path.lstrip("/"), headers={"Accept": accept})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _json(server: Served, path: str) -> tuple[int, Any]:
    status, body = _get(server, path)
    return status, json.loads(body)


def test_cause_as_json(served: tuple[Served, dict[str, str]]) -> None:
    server, runs = served
    status, cause = _json(server, f"/runs/{runs['failed']}/cause")
    assert status == 200
    assert set(cause) == {"spanId", "callId", "chain", "error"}
    assert cause["chain"][-1] == cause["spanId"]
    assert len(cause["chain"]) == 6
    assert cause["callId"].endswith("/agent:fallback:0/turn:demo-model:2")
    assert cause["error"]["name"] == "PromptError"
    assert cause["error"]["message"].endswith("$.healthy must be boolean")
    # A run that did not fail, and no run: a 404 that says which.
    status, answer = _json(server, f"/runs/{runs['hostile']}/cause")
    assert status == 404
    assert "did not fail" in answer["error"]
    status, answer = _json(server, f"/runs/{'e' * 32}/cause")
    assert status == 404
    assert "no run" in answer["error"]


def test_the_failed_runs_page_opens_on_its_cause_with_the_chain(served: tuple[Served, dict[str, str]]) -> None:
    server, runs = served
    _, cause = _json(server, f"/runs/{runs['failed']}/cause")
    status, body = _get(server, f"/runs/{runs['failed']}", accept="text/html")
    assert status == 200
    page = html(body)
    assert one(page, "#selection").attributes["data-span"] == cause["spanId"]
    assert [a.attributes["data-span"] for a in page.css("#cause .chain a")] == cause["chain"]
    assert [a.text() for a in page.css("#cause .chain a")][-3:] == ["fallback", "generation 0", "turn 2"]
    assert "PromptError" in one(page, "#cause-error").text()
    assert one(page, "#detail-status").text() == "failed attempt"
    assert len(page.css("#tree .badge.handled")) == 1  # the prober (folded: its probe tool is not drawn)
    # A span asked for by the link is shown, not the cause.
    first = cause["chain"][1]
    page = html(_get(server, f"/runs/{runs['failed']}?span={first}", accept="text/html")[1])
    assert one(page, "#selection").attributes["data-span"] == first
    # The cause fragment alone, for a page that asks.
    status, fragment = _get(server, f"/runs/{runs['failed']}/cause", accept="text/html")
    assert status == 200
    assert 'id="cause"' in fragment


def test_find_as_json(served: tuple[Served, dict[str, str]]) -> None:
    server, runs = served
    status, hits = _json(server, f"/runs/{runs['failed']}/find?q=looked")
    assert status == 200
    assert hits[0] == {
        "spanId": hits[0]["spanId"],
        "callId": "root/agent:release-checker:0/agent:fallback:0/turn:demo-model:0",
        "field": "message.content",
        "snippet": '…"healthy": "probably", "reason": "the dashboard looked green"}',
    }
    assert _json(server, f"/runs/{runs['failed']}/find?q=zebra") == (200, [])
    status, answer = _json(server, f"/runs/{runs['failed']}/find?q={'x' * 201}")
    assert status == 400
    assert "at most 200" in answer["error"]
    assert _json(server, f"/runs/{'e' * 32}/find?q=looked")[0] == 404


def test_found_text_is_escaped_in_the_find_box_and_the_runs_search(served: tuple[Served, dict[str, str]]) -> None:
    server, runs = served
    status, hits = _json(server, f"/runs/{runs['hostile']}/find?q=needle")
    assert status == 200
    assert hits[0]["snippet"] == HOSTILE
    assert hits[0]["spanId"] == runs["turn"]

    _, body = _get(server, f"/runs/{runs['hostile']}/search?q=needle", accept="text/html")
    assert "<script>" not in body
    assert "<img" not in body
    found = one(html(body), ".find-hits li")
    assert one(found, ".field").text() == "message.content"
    assert one(found, "mark").text() == "needle"
    assert found.text().endswith('…onerror="alert(1)"> needle <script>alert(2)</script>')  # as text, cut before

    _, body = _get(server, "/?q=needle", accept="text/html")
    assert "<script>" not in body
    assert "<img" not in body
    link = one(html(body), f"tr[data-run-id='{runs['hostile']}'] a.run-hit")
    assert link.attributes["href"] == f"/runs/{runs['hostile']}?span={runs['turn']}&q=needle"
    assert one(link, "mark").text() == "needle"
    assert urllib.parse.urlsplit(link.attributes["href"]).path == f"/runs/{runs['hostile']}"
