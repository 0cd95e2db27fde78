"""Names instead of hex ids: a snapshot's cut, replays and forks on the runs list and the run page,
parallel agents on the timeline, and runs named by the short id the UI shows."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from devtool.demo import research
from devtool.store import Store, get_snapshot, load_file
from devtool.web import create_app
from devtool.web.settings import Settings
from tests.test_web_replay import RESEARCH, rewound
from tests.web_runs import html, one, record

WRITER = "root/agent:research-lead:0/agent:writer:0"


@pytest.fixture
def client(store: Store, tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(create_app(store, Settings(replay_root=tmp_path)), follow_redirects=False) as client:
        yield client


def test_a_fork_and_its_replay_are_named_by_what_they_changed(client: TestClient, store: Store, tmp_path: Path) -> None:
    original = record(store, tmp_path, lambda: research.main(RESEARCH["props"]), name="original", metadata=RESEARCH)
    snapshot = rewound(client, store, original, "writer", "agent", "after")
    page = html(client.get(snapshot).text)
    assert one(page, "#snapshot-cut").text().split() == ["after", "writer", "#0"]
    researcher = one(page, 'li.frame[data-call-id="root/agent:research-lead:0/agent:researcher:1"]')
    assert one(researcher, ".call-index").text() == "#1"

    form = {"call.0": WRITER, "memory.0": json.dumps({"style": "detailed", "findings": 3})}
    forked = client.post(f"{snapshot}/fork", data=form)
    assert forked.status_code == 303, forked.text
    fork_page = html(client.get(forked.headers["location"]).text)
    assert one(fork_page, ".fork-label").text() == "fork: memory of writer #0"

    # What the replay child records (`devtool run --snapshot --metadata`), run here in the test's process.
    fork_id = forked.headers["location"].rsplit("/", 1)[1]
    replay = {"id": "r1", "snapshotId": fork_id, "originalTraceId": original}
    replayed = record(
        store,
        tmp_path,
        lambda: research.main(RESEARCH["props"]),
        name="replayed",
        snapshot=dict(get_snapshot(store, fork_id).snapshot),
        metadata={**RESEARCH, "replay": replay},
    )
    other = record(store, tmp_path, lambda: research.main(RESEARCH["props"]), name="other", metadata=RESEARCH)

    # The runs list: the fork right under its original, marked; the other run of that name is not.
    runs = html(client.get("/").text)
    order = [row.attributes["data-run-id"] for row in runs.css("tr.run-row")]
    assert order.index(replayed) == order.index(original) + 1
    row = one(runs, f'tr.run-row[data-run-id="{replayed}"]')
    assert "run-child" in str(row.attributes["class"])
    assert one(row, ".badge.lineage").text() == "fork: memory of writer #0"
    assert one(row, ".run-lineage a").attributes["href"] == f"/runs/{original}"
    assert not one(runs, f'tr.run-row[data-run-id="{other}"]').css(".badge.lineage")

    # The original's actions list it by name and label, with a compare link; the fork says what it is.
    actions = html(client.get(f"/runs/{original}/actions").text)
    (item,) = actions.css("#run-replays li")
    assert re.sub(r"\s+", " ", item.text()).startswith("fork: memory of writer #0 research-lead")
    assert item.css("a")[-1].attributes["href"] == f"/compare?a={original}&b={replayed}"
    own = html(client.get(f"/runs/{replayed}/actions").text)
    assert one(own, "#replay-of .badge.lineage").text() == "fork: memory of writer #0"
    assert one(own, "#compare-original").attributes["href"] == f"/compare?a={original}&b={replayed}"

    # The compare page offers the runs related to A: the fork first, then the other run of that name.
    picker = html(client.get(f"/compare?a={original}").text)
    options = [(o.attributes["value"], o.text()) for o in picker.css("#compare-with option")]
    assert [value for value, _ in options] == [replayed, other]
    assert options[0][1].startswith("fork: memory of writer #0 · research-lead")


def test_parallel_agents_carry_their_number_and_props_on_the_timeline(
    client: TestClient, store: Store, tmp_path: Path
) -> None:
    trace_id = record(store, tmp_path, lambda: research.main(RESEARCH["props"]), metadata=RESEARCH)
    page = html(client.get(f"/runs/{trace_id}").text)
    titles = [str(bar.attributes.get("data-title")) for bar in page.css('#bars rect[data-kind="agent"]')]
    researchers = sorted(t for t in titles if t.startswith("agent researcher"))
    assert len(researchers) >= 2
    for n, title in enumerate(researchers):
        assert title.startswith(f'agent researcher #{n} · topic="'), title


def minimal_run(folder: Path, trace_id: str) -> Path:
    path = folder / f"{trace_id}.jsonl"
    events = [
        {"schemaVersion": 1, "type": f"runWith:{edge}", "timestamp": 1_790_000_000_000 + n, "agentId": "",
         "trace": {"traceId": trace_id, "spanId": "1" * 16, "parentSpanId": ""}}
        for n, edge in enumerate(("start", "end"))
    ]  # fmt: skip
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


def test_a_run_is_opened_by_the_short_id_the_ui_shows(client: TestClient, store: Store, tmp_path: Path) -> None:
    for trace_id in ("abcd1234" + "0" * 24, "abcd5678" + "0" * 24):
        load_file(store, minimal_run(tmp_path, trace_id))
    found = client.get("/runs/abcd1234000?span=x")
    assert found.status_code == 303
    assert found.headers["location"] == f"/runs/abcd1234{'0' * 24}?span=x"
    assert client.get("/runs/ABCD5678").headers["location"] == f"/runs/abcd5678{'0' * 24}"
    ambiguous = client.get("/runs/abcd")
    assert ambiguous.status_code == 400
    assert "abcd1234" + "0" * 24 in ambiguous.text
    assert "abcd5678" + "0" * 24 in ambiguous.text
    assert client.get("/runs/abc").status_code == 404  # too short to name a run
    assert client.get("/runs/ffff").status_code == 404
    answer = client.get("/api/v1/runs/abcd")
    assert answer.status_code == 400
    assert {c["traceId"][:8] for c in answer.json()["candidates"]} == {"abcd1234", "abcd5678"}
    assert client.get("/api/v1/runs/abcd5").json()["traceId"] == "abcd5678" + "0" * 24
