"""Fuzz: hostile batches in through HTTP ingest and the upload form (the file load), then every page
of the runs they touched answers 200 or 4xx within a second. `testkit.fuzz` has the strategies and
the pages; `bench/soak.py` runs the same against a real server for as long as asked."""

from __future__ import annotations

import json
import time
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from devtool.store import Store
from devtool.web import create_app
from testkit.fuzz import BATCHES, HANG_SECONDS, TEXT, WINDOW, Probe, pages_after

EVENTS = 2000  # fuzzed events a run of the suite sends, at least
PAGES = 8  # asked after each batch


@pytest.mark.timeout(900)  # 75 batches and ~600 pages; on a loaded machine, minutes
def test_every_page_answers_whatever_came_in(store: Store) -> None:
    sent: Counter[str] = Counter()
    probe = Probe()
    with TestClient(create_app(store), raise_server_exceptions=False) as client:

        @settings(max_examples=75, deadline=None, database=None, suppress_health_check=list(HealthCheck))
        @given(batch=BATCHES, door=st.sampled_from(["ingest", "upload"]), window=WINDOW, query=TEXT, data=st.data())
        def case(batch: list[Any], door: str, window: Any, query: str, data: st.DataObject) -> None:
            if door == "ingest":
                body = json.dumps(batch).encode()
                answer = client.post("/api/v1/traces", content=body, headers={"Content-Type": "application/json"})
                assert answer.status_code in (200, 422), answer.text[:500]
            else:
                lines = "".join(json.dumps(value) + "\n" for value in batch).encode()
                files = {"file": (f"fuzz-{sent['batches']}.jsonl", lines)}
                answer = client.post("/upload", files=files, data={"bad_lines": "skip"})
                assert answer.status_code in (200, 400, 422), answer.text[-500:]
            sent["batches"] += 1
            sent["events"] += len(batch)
            # A few of the pages each time (the soak asks them all): every kind is asked many times over.
            pages = pages_after(batch, window, query)
            for path in data.draw(st.lists(st.sampled_from(pages), min_size=4, max_size=PAGES, unique=True)):
                started = time.perf_counter()
                status = client.get(path).status_code
                probe.check(path, status, time.perf_counter() - started, HANG_SECONDS)
            assert probe.failures == []

        case()
    assert sent["events"] >= EVENTS, sent
    assert probe.pages > 300
