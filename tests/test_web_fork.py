"""Forks through httpx: a new snapshot with a frame's memory edited or journal entries dropped, its
parent recorded and the original kept; a bad edit is refused where it is."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from devtool.demo import research
from devtool.store import Store, get_snapshot, list_snapshots
from devtool.web import create_app
from tests.web_runs import html, one, record, rewind, span_of


@pytest.fixture
def client(store: Store) -> Iterator[TestClient]:
    with TestClient(create_app(store), follow_redirects=False) as client:
        yield client


def research_snapshot(client: TestClient, store: Store, tmp_path: Path) -> tuple[str, str]:
    """The research demo rewound to just after its writer: (snapshot id, writer's callId)."""
    trace_id = record(store, tmp_path, lambda: research.main({"delay": 0}), name="research")
    writer = span_of(store, trace_id, "writer", "agent")
    return rewind(client, trace_id, writer, "after"), "root/agent:research-lead:0/agent:writer:0"


def form_index(client: TestClient, snapshot_id: str, call_id: str) -> str:
    page = html(client.get(f"/snapshots/{snapshot_id}").text)
    (field,) = [f for f in page.css("input[name^='call.']") if f.attributes["value"] == call_id]
    return str(field.attributes["name"]).removeprefix("call.")


def test_a_fork_edits_memory_and_records_its_parent(client: TestClient, store: Store, tmp_path: Path) -> None:
    parent, writer = research_snapshot(client, store, tmp_path)
    index = form_index(client, parent, writer)
    response = client.post(
        f"/snapshots/{parent}/fork",
        data={f"call.{index}": writer, f"memory.{index}": '{"style": "detailed", "findings": 3}'},
    )
    assert response.status_code == 303, response.text
    fork_id = response.headers["location"].removeprefix("/snapshots/")
    fork = get_snapshot(store, fork_id)
    assert fork.info.parent_id == parent
    lead = fork.snapshot["root"]["children"]["root/agent:research-lead:0"]
    assert lead["children"][writer]["memory"] == {"style": "detailed", "findings": 3}
    assert fork.snapshot["metadata"]["fork"] == {"parent": parent, "memory": [writer], "dropped": []}
    original = get_snapshot(store, parent).snapshot
    assert original["root"]["children"]["root/agent:research-lead:0"]["children"][writer]["memory"]["style"] == "brief"
    page = html(client.get(f"/snapshots/{fork_id}").text)
    assert one(page, "#snapshot-parent").attributes["href"] == f"/snapshots/{parent}"
    assert [a.attributes["href"] for a in html(client.get(f"/snapshots/{parent}").text).css(".fork-link")] == [
        f"/snapshots/{fork_id}"
    ]


def test_a_fork_drops_journal_entries(client: TestClient, store: Store, tmp_path: Path) -> None:
    parent, writer = research_snapshot(client, store, tmp_path)
    index = form_index(client, parent, writer)
    page = html(client.get(f"/snapshots/{parent}").text)
    (box,) = [b for b in page.css("input[name=drop]") if str(b.attributes["value"]).startswith(f"{index}:")]
    _, kind, digest = str(box.attributes["value"]).split(":", 2)
    response = client.post(f"/snapshots/{parent}/fork", data={f"call.{index}": writer, "drop": box.attributes["value"]})
    assert response.status_code == 303
    fork = get_snapshot(store, response.headers["location"].removeprefix("/snapshots/")).snapshot
    journal = fork["root"]["children"]["root/agent:research-lead:0"]["children"][writer]["journal"]
    assert digest not in journal[kind]
    assert fork["metadata"]["fork"]["dropped"] == [{"callId": writer, "kind": kind, "contentHash": digest}]


@pytest.mark.parametrize(
    ("memory", "message"),
    [
        ('{"style": }', "line 1, column 11: Expecting value"),
        ("[1, 2]", "must be a JSON object"),
        ('{"n": NaN}', "NaN is not JSON"),
        (None, "nothing to fork"),
    ],
)
def test_a_bad_fork_is_refused_and_the_original_kept(
    client: TestClient, store: Store, tmp_path: Path, memory: str | None, message: str
) -> None:
    parent, writer = research_snapshot(client, store, tmp_path)
    index = form_index(client, parent, writer)
    data = {f"call.{index}": writer}
    if memory is not None:
        data[f"memory.{index}"] = memory
    before = copy.deepcopy(get_snapshot(store, parent).snapshot)
    response = client.post(f"/snapshots/{parent}/fork", data=data)
    assert response.status_code == 422
    assert message in one(html(response.text), "#snapshot-error").text()
    assert [s.snapshot_id for s in list_snapshots(store)] == [parent]
    assert get_snapshot(store, parent).snapshot == before
