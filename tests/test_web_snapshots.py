"""Rewind, the snapshot page and its JSON, uploads and snapshots a run dumped, through httpx (forks:
test_web_fork.py)."""

from __future__ import annotations

import asyncio
import getpass
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from starlette.testclient import TestClient

from devtool.core import MemorySink, create_agent, create_tool, memory, run_with
from devtool.core.debugger import dump_snapshot
from devtool.core.snapshot_tree import snapshot_id as tree_id
from devtool.store import Store, append_events, get_snapshot, list_snapshots
from devtool.web import create_app
from devtool.web.pages import snapshot_frames
from devtool.web.settings import Settings
from tests.conftest import Trace
from tests.web_runs import html, one, record, rewind, span_of

HOSTILE = '<script>alert("memory")</script><img src=x onerror=alert(1)>'


@pytest.fixture
def client(store: Store) -> Iterator[TestClient]:
    with TestClient(create_app(store), follow_redirects=False) as client:
        yield client


def lookup_run(store: Store, tmp_path: Path, *, dump: bool = False) -> str:
    """A researcher that remembers hostile text, calls a tool, calls one whose output is not JSON
    (a tombstone), and, with `dump`, takes a snapshot of itself half-way."""
    lookup = create_tool("lookup", lambda q: {"hit": q.upper(), "z": 1, "a": 2})
    opaque = create_tool("opaque", lambda: {1, 2})  # a set is not JSON: journaled as a tombstone

    async def handler(props: Any) -> Any:
        memory()["note"] = HOSTILE
        found = await lookup(q="rust")
        if dump:
            dump_snapshot(metadata={"why": "half-way"})
        await opaque()
        memory()["done"] = True
        return found

    return record(store, tmp_path, lambda: create_agent("researcher", handler)({}), name="lookup")


def test_the_same_cut_gives_the_same_snapshot_id(client: TestClient, store: Store, tmp_path: Path) -> None:
    trace_id = lookup_run(store, tmp_path)
    tools = span_of(store, trace_id, "lookup", "tools:execute")
    first = rewind(client, trace_id, tools, "before")
    assert rewind(client, trace_id, tools, "before") == first
    assert store.query("SELECT count(*) FROM rewind.snapshots") == [(1,)]
    after = rewind(client, trace_id, tools, "after")
    assert after != first
    stored = get_snapshot(store, first)
    assert first == tree_id(stored.snapshot)
    assert stored.snapshot["provenance"] == {
        "traceId": trace_id,
        "spanId": tools,
        "anchor": "before",
        "source": "restore",
    }


def test_a_rewind_before_a_tool_leaves_it_out_of_the_journal(client: TestClient, store: Store, tmp_path: Path) -> None:
    trace_id = lookup_run(store, tmp_path)
    tools = span_of(store, trace_id, "lookup", "tools:execute")
    frame = get_snapshot(store, rewind(client, trace_id, tools, "before")).snapshot["root"]["children"]
    (researcher,) = frame.values()
    assert researcher["journal"]["tool"] == {}
    assert researcher["state"]["status"] == "running"
    frame = get_snapshot(store, rewind(client, trace_id, tools, "after")).snapshot["root"]["children"]
    (researcher,) = frame.values()
    (entry,) = researcher["journal"]["tool"].values()
    assert entry["output"] == {"hit": "RUST", "z": 1, "a": 2}


@pytest.mark.parametrize(
    ("form", "status", "message"),
    [
        ({"span_id": "0000000000000000", "anchor": "before"}, 422, "Target span &#34;0000000000000000&#34;"),
        ({"span_id": "SPAN", "anchor": "sideways"}, 422, "anchor must be &#34;before&#34; or &#34;after&#34;"),
        ({"anchor": "after"}, 400, "rewind needs span_id"),
    ],
)
def test_what_a_rewind_refuses(
    client: TestClient, store: Store, tmp_path: Path, form: dict[str, str], status: int, message: str
) -> None:
    trace_id = lookup_run(store, tmp_path)
    form = {
        key: value.replace("SPAN", span_of(store, trace_id, "lookup", "tools:execute")) for key, value in form.items()
    }
    response = client.post(f"/runs/{trace_id}/rewind", data=form)
    assert response.status_code == status
    assert message in response.text
    assert store.query("SELECT count(*) FROM rewind.snapshots") == [(0,)]
    assert client.post("/runs/nope/rewind", data={"span_id": "x", "anchor": "after"}).status_code == 404


def test_the_snapshot_page_shows_provenance_frames_memory_journal_and_tombstones(
    client: TestClient, store: Store, tmp_path: Path
) -> None:
    trace_id = lookup_run(store, tmp_path)
    agent = span_of(store, trace_id, "researcher", "agent")
    snapshot_id = rewind(client, trace_id, agent, "after")
    page = html(client.get(f"/snapshots/{snapshot_id}").text)
    link = one(page, "#snapshot-run")
    assert link.attributes["href"] == f"/runs/{trace_id}?span={agent}"
    provenance = one(page, ".provenance").text()
    assert "after" in provenance
    assert "rewind (restore_snapshot over the trace)" in provenance
    assert one(page, ".who").text() == getpass.getuser()  # on loopback: the account the server runs as
    frames = page.css("#frames > li.frame")
    assert [f.attributes["data-call-id"] for f in frames] == ["root", "root/agent:researcher:0"]
    researcher = frames[1]
    assert one(researcher, ".status-badge").text() == "completed"
    assert HOSTILE in one(researcher, ".frame-memory").text()  # shown as text...
    assert not page.css("script:not([src])")  # ...never as markup
    rows = researcher.css("table.journal tr.entry")
    assert len(rows) == 2
    tombstones = researcher.css("tr.entry.tombstone")
    assert len(tombstones) == 1
    assert "not replayable" in tombstones[0].text()
    assert one(page, ".has-tombstones dd").text() == "1"
    assert '"RUST"' in researcher.css("tr.entry:not(.tombstone)")[0].text()
    assert one(page, "#replay-button").attributes["href"] == f"/snapshots/{snapshot_id}/replay"


def test_each_frame_says_where_its_memory_comes_from_and_what_the_run_set_later(
    client: TestClient, store: Store, tmp_path: Path
) -> None:
    trace_id = lookup_run(store, tmp_path)
    # Cut inside the researcher's only generation: its memory is restored from generation ends, so
    # it is empty, though the run went on to set `note` and `done` in it.
    inside = rewind(client, trace_id, span_of(store, trace_id, "lookup", "tools:execute"), "before")
    researcher = one(html(client.get(f"/snapshots/{inside}").text), 'li.frame[data-call-id="root/agent:researcher:0"]')
    assert one(researcher, ".memory-origin").text().startswith("empty: none of its generations had ended at the cut")
    later = one(researcher, ".memory-later")
    assert "generation 0" in one(later, "h5").text()
    assert "note" in later.text()
    assert "done" in later.text()
    assert json.loads(one(researcher, "textarea.json-editor").text()) == {}  # the fork editor starts from the snapshot
    # The run's root frame ends no generation: its memory is empty, and it says so.
    root = one(html(client.get(f"/snapshots/{inside}").text), 'li.frame[data-call-id="root"]')
    assert one(root, ".memory-origin").text().startswith("empty: the run ended no generation in this frame")
    # Cut after the agent: its memory is its generation's end, and nothing came later.
    after = rewind(client, trace_id, span_of(store, trace_id, "researcher", "agent"), "after")
    researcher = one(html(client.get(f"/snapshots/{after}").text), 'li.frame[data-call-id="root/agent:researcher:0"]')
    assert one(researcher, ".memory-origin").text().startswith("from the end of its generation 0, at +")
    assert not researcher.css(".memory-later")


def test_the_json_is_what_run_with_takes(client: TestClient, store: Store, tmp_path: Path) -> None:
    trace_id = lookup_run(store, tmp_path)
    snapshot_id = rewind(client, trace_id, span_of(store, trace_id, "researcher", "agent"), "after")
    response = client.get(f"/snapshots/{snapshot_id}.json")
    assert response.headers["content-type"] == "application/json"
    assert f"snapshot-{snapshot_id[:12]}.json" in response.headers["content-disposition"]
    document = response.json()
    assert tree_id(document) == snapshot_id
    # Replay it in-process: the recorded lookup is served from the journal, the tombstone runs again.
    calls: list[str] = []
    lookup = create_tool("lookup", lambda q: calls.append("lookup") or {"hit": "LIVE"})
    opaque = create_tool("opaque", lambda: calls.append("opaque") or [1])

    async def handler(props: Any) -> Any:
        found = await lookup(q="rust")
        await opaque()
        return found

    sink = MemorySink()
    result = asyncio.run(run_with(lambda: create_agent("researcher", handler)({}), snapshot=document, sinks=[sink]))
    assert result == {"hit": "RUST", "z": 1, "a": 2}
    assert calls == ["opaque"]


def test_a_snapshot_keeps_the_key_order_of_recorded_outputs(client: TestClient, store: Store, tmp_path: Path) -> None:
    trace_id = lookup_run(store, tmp_path)
    snapshot_id = rewind(client, trace_id, span_of(store, trace_id, "researcher", "agent"), "after")
    (researcher,) = client.get(f"/snapshots/{snapshot_id}.json").json()["root"]["children"].values()
    (entry,) = [e for e in researcher["journal"]["tool"].values() if e["output"] is not None]
    assert list(entry["output"]) == ["hit", "z", "a"]


def test_a_big_snapshot_is_shown_a_page_of_frames_at_a_time(
    client: TestClient, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(snapshot_frames, "FRAMES_PER_PAGE", 5)
    children = {
        f"root/agent:w:{i}": {
            "callId": f"root/agent:w:{i}",
            "agentId": "w",
            "memory": {"i": i},
            "journal": {"prompt": {}, "tool": {}},
            "children": {},
            "state": {"status": "completed", "output": i},
        }
        for i in range(12)
    }
    document = uploaded(client, snapshot(children=children))
    page = html(client.get(f"/snapshots/{document}?frames=5").text)
    assert [f.attributes["data-call-id"] for f in page.css("#frames > li")] == [
        f"root/agent:w:{i}" for i in range(4, 9)
    ]
    assert "frames 6–10 of 13" in one(page, ".pager").text()


def snapshot(**root: Any) -> dict[str, Any]:
    frame = {
        "callId": "root",
        "agentId": "",
        "memory": {},
        "journal": {"prompt": {}, "tool": {}},
        "children": {},
        "state": {"status": "completed"},
    }
    return {
        "processId": "p",
        "timestamp": 1.0,
        "root": {**frame, **root},
        "provenance": {"traceId": "not-in-this-store"},
        "version": 1,
    }


def uploaded(client: TestClient, document: dict[str, Any]) -> str:
    response = client.post("/snapshots", files={"file": ("snap.json", orjson.dumps(document), "application/json")})
    assert response.status_code == 303, response.text
    return str(response.headers["location"]).removeprefix("/snapshots/")


def test_an_uploaded_snapshot_gets_a_page_and_keeps_its_id(client: TestClient, store: Store) -> None:
    document = snapshot(memory={"k": "v"})
    snapshot_id = uploaded(client, document)
    assert snapshot_id == tree_id(document)
    assert get_snapshot(store, snapshot_id).snapshot == document
    page = html(client.get(f"/snapshots/{snapshot_id}").text)
    assert "(not in this DevTool)" in one(page, ".provenance").text()
    as_body = client.post("/snapshots", content=orjson.dumps(document), headers={"Content-Type": "application/json"})
    assert as_body.headers["location"] == f"/snapshots/{snapshot_id}"
    listing = html(client.get("/snapshots").text)
    assert [a.attributes["href"] for a in listing.css("table.snapshots td:first-child a")] == [
        f"/snapshots/{snapshot_id}"
    ]


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda s: s["root"]["state"].update(status="sleeping"), "snapshot.root.state.status: must be one of"),
        (lambda s: s.pop("provenance"), "snapshot.provenance: missing"),
        (lambda s: s.update(version=2), "snapshot.version: must be 1"),
        (
            lambda s: s["root"]["children"].update(x={"callId": "y"}),
            "snapshot.root.children['x'].callId: must equal its key",
        ),
        (lambda s: s["root"]["journal"]["tool"].update(h={"contentHash": "h"}), "has no output"),
    ],
)
def test_a_malformed_upload_is_refused_with_the_field_named(
    client: TestClient, store: Store, change: Any, named: str
) -> None:
    document = snapshot()
    change(document)
    response = client.post("/snapshots", files={"file": ("bad.json", orjson.dumps(document), "application/json")})
    assert response.status_code == 422
    assert named in one(html(response.text), "#upload-error").text()
    assert list_snapshots(store) == []


def test_a_snapshot_over_the_upload_limit_is_413_as_a_file_or_as_the_body(store: Store) -> None:
    body = orjson.dumps(snapshot(memory={"notes": "x" * 700}))
    over = Settings(max_upload_bytes=len(body) - 1)
    with TestClient(create_app(store, over)) as client:
        # As a file: its form is within the allowance for a form's framing, the file itself is over.
        as_file = client.post("/snapshots", files={"file": ("snap.json", body, "application/json")})
        # As the body: over by the length it declares, and by the bytes that come when it declares none.
        as_body = client.post("/snapshots", content=body, headers={"Content-Type": "application/json"})
        streamed = client.post("/snapshots", content=iter([body]), headers={"Content-Type": "application/json"})
    for refused in (as_file, as_body, streamed):
        assert refused.status_code == 413
        assert "the snapshot is over the upload limit of" in one(html(refused.text), "#upload-error").text()
    assert list_snapshots(store) == []
    at_the_limit = Settings(max_upload_bytes=len(body))
    with TestClient(create_app(store, at_the_limit), follow_redirects=False) as client:  # taken
        assert client.post("/snapshots", files={"file": ("snap.json", body, "application/json")}).status_code == 303
        assert client.post("/snapshots", content=iter([body])).status_code == 303
    assert len(list_snapshots(store)) == 1


def test_an_upload_that_is_not_json_or_not_a_file(client: TestClient) -> None:
    response = client.post("/snapshots", files={"file": ("x.json", b'{"root": ', "application/json")})
    assert response.status_code == 422
    assert "the file is not JSON" in response.text
    assert client.post("/snapshots", files={"other": ("x.json", b"{}", "application/json")}).status_code == 400
    fragment = client.post(
        "/snapshots",
        files={"file": ("x.json", b"[]", "application/json")},
        headers={"HX-Request": "true"},
    )
    assert fragment.status_code == 422
    assert fragment.text.strip().startswith('<p class="notice-error"')


def test_a_dumped_snapshot_appears_on_its_run_at_the_moment_it_was_taken(
    client: TestClient, store: Store, tmp_path: Path
) -> None:
    trace_id = lookup_run(store, tmp_path, dump=True)
    (dump_span,) = [
        row[0]
        for row in store.query("SELECT span_id FROM spans WHERE trace_id = ? AND kind = 'snapshot:dump'", [trace_id])
    ]
    reported = next(
        json.loads(line)["snapshotId"]
        for line in (tmp_path / "lookup.jsonl").read_text().splitlines()
        if '"snapshot:dump"' in line
    )
    actions = html(client.get(f"/runs/{trace_id}/actions").text)
    listed = one(actions, "#run-dumps .dump-snapshot")
    assert listed.attributes["href"] == f"/snapshots/{reported}"
    assert one(actions, "#run-dumps a.select").attributes["data-span"] == dump_span
    mark = one(actions, "#dump-strip .dump-mark")
    assert mark.attributes["href"] == f"/snapshots/{reported}"
    assert 0 < float(str(mark.attributes["data-x"])) < 100  # taken mid-run
    detail = html(client.get(f"/runs/{trace_id}?span={dump_span}").text)
    assert one(detail, "#open-dump").attributes["href"] == f"/snapshots/{reported}"
    page = client.get(f"/snapshots/{reported}")
    assert page.status_code == 200
    stored = get_snapshot(store, reported)
    assert stored.snapshot["metadata"] == {"why": "half-way"}
    assert stored.info.created_by == "dump_snapshot()"
    assert client.get("/snapshots/" + "0" * 64).status_code == 404
    assert client.get("/snapshots/not-an-id").status_code == 404


def test_the_run_page_offers_rewind_on_the_selected_span(client: TestClient, store: Store, tmp_path: Path) -> None:
    trace_id = lookup_run(store, tmp_path)
    tools = span_of(store, trace_id, "lookup", "tools:execute")
    page = html(client.get(f"/runs/{trace_id}?span={tools}").text)
    form = one(page, "form.rewind-bar")
    assert form.attributes["action"] == f"/runs/{trace_id}/rewind"
    assert one(form, "input[name=span_id]").attributes["value"] == tools
    assert one(form, "input[name=_csrf]").attributes["value"]
    assert [b.attributes["value"] for b in form.css("button[name=anchor]")] == ["before", "after"]
    assert "disabled" not in one(form, "#rewind-after").attributes


def test_a_running_span_has_no_after_to_rewind_to(client: TestClient, store: Store) -> None:
    t = Trace()
    root = t.start("runWith")
    agent = t.start("agent", root, agentId="a", callId="root/agent:a:0")
    append_events(store, t.events)
    page = html(client.get(f"/runs/{t.trace_id}?span={agent}").text)
    assert "disabled" in one(page, "#rewind-after").attributes
    assert "disabled" not in one(page, "#rewind-before").attributes
    refused = client.post(f"/runs/{t.trace_id}/rewind", data={"span_id": agent, "anchor": "after"})
    assert refused.status_code == 422
    assert "its end is not in the trace" in refused.text
