"""The server indexes big runs in the background, and a rewind uses the index once it is ready.

Before the index is ready (or for a run too small to index) a rewind walks the run's events: the
snapshot and its id are the same either way, and the page shows the same frames.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from starlette.testclient import TestClient

from bench.gen_trace import generate
from devtool.core.debugger import restore_snapshot
from devtool.core.snapshot_tree import snapshot_id
from devtool.store import Store, append_events, get_snapshot, load_file, span_keys, span_keys_build
from devtool.store.frame_index_tables import IndexState, index_state
from devtool.web import create_app
from devtool.web.settings import Settings
from tests.conftest import Trace
from tests.web_runs import html

QUICK = Settings(rewind_index_events=1000, rewind_index_interval=0.05)


def wait_for_index(store: Store, trace_id: str, seconds: float = 30) -> IndexState:
    deadline = time.monotonic() + seconds
    while (state := index_state(store, trace_id)) is None or not state.fresh:
        assert time.monotonic() < deadline, "the run was not indexed"
        time.sleep(0.05)
    return state


def middle_worker(store: Store, trace_id: str) -> str:
    rows = store.query(
        "SELECT span_id FROM spans WHERE trace_id = ? AND agent_id = 'worker' AND kind = 'agent' ORDER BY start_ts",
        [trace_id],
    )
    return str(rows[len(rows) // 2][0])


def test_a_big_run_is_indexed_and_rewound_from_its_index(store: Store, tmp_path: Path) -> None:
    trace = generate(tmp_path / "big.jsonl", events=4000, seed=11, concurrency=6)
    load_file(store, trace.path)
    small = generate(tmp_path / "small.jsonl", events=500, seed=12)
    load_file(store, small.path)
    events = [json.loads(line) for line in trace.path.read_text().splitlines()]
    span = middle_worker(store, trace.trace_id)
    with TestClient(create_app(store, QUICK), follow_redirects=False) as client:
        state = wait_for_index(store, trace.trace_id)
        assert state.indexed
        assert state.frames > 100
        for anchor in ("before", "after"):
            response = client.post(f"/runs/{trace.trace_id}/rewind", data={"span_id": span, "anchor": anchor})
            assert response.status_code == 303, response.text
            rewound = response.headers["location"].removeprefix("/snapshots/")
            expected = restore_snapshot(events, span_id=span, anchor=anchor)
            assert rewound == snapshot_id(expected)
            assert get_snapshot(store, rewound).snapshot == expected
            page = html(client.get(f"/snapshots/{rewound}").text)
            frames = [node.text() for node in page.css(".frame .call-id")]
            assert frames[:2] == ["root", "root/agent:orchestrator:0"]
            total = _frames(expected["root"])
            assert len(frames) == min(total, 100)
            assert page.css(".snap-counts dd")[0].text().replace(",", "") == str(total)
    assert index_state(store, small.trace_id) is None  # under 1,000 events: rewound from its events


def test_a_big_run_gets_its_span_keys_and_a_run_that_grows_is_keyed_again(store: Store, tmp_path: Path) -> None:
    trace = generate(tmp_path / "big.jsonl", events=4000, seed=14, concurrency=6)
    load_file(store, trace.path)
    with TestClient(create_app(store, QUICK)):
        wait_for_index(store, trace.trace_id)
        deadline = time.monotonic() + 30
        while span_keys_build.runs_to_key(store, min_events=1000):
            assert time.monotonic() < deadline, "the run was not keyed"
            time.sleep(0.05)
        with store.reader() as cursor:
            assert span_keys.locate(cursor, trace.trace_id, [trace.orchestrator_span_id])
        grown = Trace(trace.trace_id, start_ms=trace.last_ms + 10)
        grown.point("sys:log", trace.orchestrator_span_id, message="one more line")
        append_events(store, grown.events)
        with store.reader() as cursor:  # grown: its keys are of the run as it was, not used
            assert span_keys.locate(cursor, trace.trace_id, [trace.orchestrator_span_id]) is None
        while span_keys_build.runs_to_key(store, min_events=1000):
            assert time.monotonic() < deadline, "the grown run was not keyed again"
            time.sleep(0.05)
        with store.reader() as cursor:
            assert span_keys.locate(cursor, trace.trace_id, [trace.orchestrator_span_id])


def test_before_the_index_is_ready_a_rewind_makes_the_same_snapshot(store: Store, tmp_path: Path) -> None:
    trace = generate(tmp_path / "big.jsonl", events=3000, seed=13, concurrency=4)
    load_file(store, trace.path)
    span = middle_worker(store, trace.trace_id)
    with TestClient(create_app(store), follow_redirects=False) as client:  # the default: not indexed
        walked = client.post(f"/runs/{trace.trace_id}/rewind", data={"span_id": span, "anchor": "after"})
    assert index_state(store, trace.trace_id) is None
    with TestClient(create_app(store, QUICK), follow_redirects=False) as client:
        wait_for_index(store, trace.trace_id)
        indexed = client.post(f"/runs/{trace.trace_id}/rewind", data={"span_id": span, "anchor": "after"})
    assert walked.status_code == indexed.status_code == 303
    assert walked.headers["location"] == indexed.headers["location"]
    assert store.query("SELECT count(*) FROM rewind.snapshots") == [(1,)]


def _frames(frame: dict[str, object]) -> int:
    children = frame["children"]
    assert isinstance(children, dict)
    return 1 + sum(_frames(child) for child in children.values())
