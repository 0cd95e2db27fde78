"""Every page over any URL: each GET endpoint, asked with hostile values in each query parameter it
reads, answers 200, 3xx or 4xx (a 400 saying what is wrong), never a 5xx, and without hanging.

The endpoints are taken from `ROUTES`, so one added later without an entry in `PARAMS` fails
`test_every_get_endpoint_is_probed` until it is given one."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from starlette.routing import Route
from starlette.testclient import TestClient

from devtool.demo import billing
from devtool.store import Store, load_file
from devtool.web import create_app
from devtool.web.routes import ROUTES
from testkit.fuzz import HANG_SECONDS

HOSTILE = [
    "",
    "-1",
    "0",
    "1e999",
    "nan",
    "-inf",
    "99999999999999999999999999",
    "10000000000000000",
    "-1e300",
    "1.5",
    "<script>alert(1)</script>",
    "x" * 5000,
    "\x00\x1b[31m",
    "%",
    "../../etc/passwd",
]
# The query parameters each GET endpoint reads (streams are probed for `after` only: they stay open).
PARAMS: dict[str, tuple[str, ...]] = {
    "/": ("q", "status", "page"),
    "/login": ("next",),
    "/live/runs": ("after",),
    "/api/v1/server": (),
    "/snapshots": ("page",),
    "/snapshots/{snapshot_id}.json": (),
    "/snapshots/{snapshot_id}": ("frames",),
    "/snapshots/{snapshot_id}/replay": (),
    "/replays/{replay_id}": (),
    "/processes/{process_id:id}": ("entry", "open", "start", "end", "page"),
    "/processes/{process_id:id}/rewind": ("entry", "mode"),
    "/process-rewind": ("process", "entry", "mode"),
    "/runs/{trace_id:id}": ("span", "start", "end", "w"),
    "/runs/{trace_id:id}/select": ("span", "start", "end"),
    "/runs/{trace_id:id}/detail": ("span", "start", "end"),
    "/runs/{trace_id:id}/timeline": ("start", "end", "w", "span"),
    "/runs/{trace_id:id}/header": (),
    "/runs/{trace_id:id}/tree": ("span",),
    "/runs/{trace_id:id}/tree/{span_id}/children": ("offset", "span"),
    "/runs/{trace_id:id}/spans/{span_id}/usage": (),
    "/runs/{trace_id:id}/spans/{span_id}/answer": (),
    "/runs/{trace_id:id}/spans/{span_id}/playground": (),
    "/runs/{trace_id:id}/spans/{span_id}/playground/stream/{job}": (),
    "/runs/{trace_id:id}/search": ("q",),
    "/runs/{trace_id:id}/actions": (),
    "/runs/{trace_id:id}/compare": ("with",),
    "/compare": ("a", "b", "call"),
    "/api/v1/runs/{given:id}": (),
    "/runs/{trace_id:id}/export.jsonl.gz": (),
    "/runs/{trace_id:id}/export.otlp.jsonl": (),
    "/runs/{trace_id:id}/export.perfetto.json": (),
    "/runs/{trace_id:id}/live": ("after",),
    "/runs/{trace_id:id}/cause": ("span", "start", "end"),
    "/runs/{trace_id:id}/find": ("q",),
}
STREAMS = {"/live/runs", "/runs/{trace_id:id}/live"}
STARTS = {"", "0", "10000000000000000"}  # event ids a stream may start after: it then stays open


def get_paths() -> list[str]:
    return [r.path for r in ROUTES if isinstance(r, Route) and "GET" in (r.methods or ())]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, dict[str, str]]]:
    """A store with the billing incident (a journal and its run) and a snapshot of the run."""
    folder = tmp_path_factory.mktemp("params")
    journal, traces = asyncio.run(billing.run_incident(folder / "incident"))
    store = Store(folder / "store.duckdb")
    load_file(store, journal)
    trace_id = load_file(store, traces[0]).traces[0]
    process_id = json.loads(journal.read_text().splitlines()[0])["process_id"]
    with TestClient(create_app(store), raise_server_exceptions=False, follow_redirects=False) as client:
        span_id = json.loads(traces[0].read_text().splitlines()[0])["trace"]["spanId"]
        rewound = client.post(f"/runs/{trace_id}/rewind", data={"span_id": span_id, "anchor": "after"})
        assert rewound.status_code == 303, rewound.text
        ids = {
            "trace_id:id": trace_id,
            "span_id": span_id,
            "process_id:id": process_id,
            "snapshot_id": rewound.headers["location"].rsplit("/", 1)[1],
            "replay_id": "0" * 32,
            "given:id": trace_id[:8],
            "job": "0" * 32,
        }
        yield client, ids
    store.close()


def filled(path: str, ids: dict[str, str]) -> str:
    for name, value in ids.items():
        path = path.replace("{" + name + "}", quote(value, safe=""))
    return path


def test_every_get_endpoint_is_probed() -> None:
    assert sorted(get_paths()) == sorted(PARAMS)


@pytest.mark.parametrize("path", sorted(PARAMS))
def test_hostile_query_values_get_a_4xx_not_a_5xx(served: tuple[TestClient, dict[str, str]], path: str) -> None:
    client, ids = served
    url = filled(path, ids)
    answers: dict[tuple[str, str], int] = {}
    failures: list[str] = []
    asks: list[dict[str, Any]] = [{}]
    asks += [{name: value} for name in PARAMS[path] for value in HOSTILE]
    for query in asks:
        if path in STREAMS and (not query or set(query.values()) <= STARTS):
            continue
        started = time.perf_counter()
        response = client.get(f"{url}?{urlencode(query)}" if query else url)
        took = time.perf_counter() - started
        if response.status_code >= 500 or took > HANG_SECONDS:
            failures.append(f"{response.status_code} in {took:.2f} s: {query!r:.80}: {response.text[-200:]!r}")
        for name, value in query.items():
            answers[name, value] = response.status_code
    assert failures == []
    for (name, value), status in answers.items():
        if status == 400:
            continue
        # A value taken as is is one the page can show: never the hostile numbers as a window.
        assert not (name in ("start", "end") and value in ("1e999", "nan", "-inf", "10000000000000000")), (name, value)
