"""The scenario of issue 18, end to end: a real `@rejelly/core` agent streaming into a real
`devtool serve` through that library's own review exporter, over a connection that loses an answer.

The agent (`testkit/rejelly/scenario.mjs`): an orchestrator runs three workers in parallel (each asks
the model for two tool calls, then answers), a sub-agent that throws (caught), and a summary. Between
the exporter and the server sits a proxy that forwards the first batch and then answers 503, as a
connection dropped after the server stored it would: the exporter posts the same batch again. The
run must be stored once, and snapshots rewound from it by the DevTool must be taken by that library's
`runWith` and replay with model calls only after the cut.
"""

from __future__ import annotations

import gzip
import json
import threading
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx2 as httpx
import pytest

from e2e.conftest import ServerFactory
from testkit import rejelly


class LossyProxy(ThreadingHTTPServer):
    """Forwards POSTs to `target`; the first one's answer is lost (503 after the server took it)."""

    def __init__(self, target: str) -> None:
        super().__init__(("127.0.0.1", 0), _Forward)
        self.target = target
        self.bodies: list[bytes] = []
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/api/v1/traces"


class _Forward(BaseHTTPRequestHandler):
    server: LossyProxy

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        request = urllib.request.Request(
            self.server.target, data=body, headers={"Content-Type": "application/json"}, method="POST"
        )
        with urllib.request.urlopen(request, timeout=30) as answer:
            status, text = answer.status, answer.read()
        with self.server.lock:
            self.server.bodies.append(body)
            lost = len(self.server.bodies) == 1
        self.send_response(503 if lost else status)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"error": "answer lost"}' if lost else text)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def streamed(serve: ServerFactory) -> Iterator[tuple[str, dict[str, Any], LossyProxy]]:
    server = serve()
    url = server.url.rstrip("/")
    proxy = LossyProxy(f"{url}/api/v1/traces")
    thread = threading.Thread(target=proxy.serve_forever, daemon=True)
    thread.start()
    try:
        run = rejelly.run("scenario.mjs", {"endpoint": proxy.url}, timeout=120)
        yield url, run, proxy
    finally:
        proxy.shutdown()
        proxy.server_close()


def stored_events(url: str, trace_id: str) -> list[dict[str, Any]]:
    answer = httpx.get(f"{url}/runs/{trace_id}/export.jsonl.gz", timeout=30)
    assert answer.status_code == 200
    return [json.loads(line) for line in gzip.decompress(answer.content).splitlines()]


def rewind(url: str, trace_id: str, span_id: str, anchor: str) -> dict[str, Any]:
    answer = httpx.post(f"{url}/runs/{trace_id}/rewind", data={"span_id": span_id, "anchor": anchor}, timeout=60)
    assert answer.status_code == 303, answer.text
    snapshot = httpx.get(f"{url}{answer.headers['location']}.json", timeout=30)
    assert snapshot.status_code == 200
    return snapshot.json()  # type: ignore[no-any-return]


def replay_calls(snapshot: dict[str, Any]) -> int:
    """How many model calls the library's own runWith makes replaying `snapshot` (it refuses a bad one)."""
    replay = rejelly.run("scenario.mjs", {"snapshot": snapshot}, timeout=120)
    assert replay["error"] is None, replay["error"]
    assert replay["result"]["answers"] == ["worker done"] * 3
    return int(replay["modelCalls"])


def test_a_retried_batch_is_stored_once_and_rewinds_replay_in_the_library(
    streamed: tuple[str, dict[str, Any], LossyProxy],
) -> None:
    url, run, proxy = streamed
    assert run["error"] is None
    assert run["modelCalls"] == 7
    emitted = run["events"]
    trace_id = emitted[0]["trace"]["traceId"]
    # The exporter did post the first batch twice, byte for byte.
    assert len(proxy.bodies) >= 3
    assert proxy.bodies[0] == proxy.bodies[1]
    events = stored_events(url, trace_id)
    assert len(events) == len(emitted)
    assert sorted(e["_seq"] for e in events) == list(range(len(emitted)))
    assert sum(e["type"] == "agent:start" for e in events) == 5

    spans = {(e["type"], e.get("agentId")): e["trace"]["spanId"] for e in emitted}
    # After the orchestrator: the whole run is in the journal.
    assert replay_calls(rewind(url, trace_id, spans[("agent:end", "orchestrator")], "after")) == 0
    # Before the failing sub-agent: the workers are served, only the summary asks the model.
    assert replay_calls(rewind(url, trace_id, spans[("agent:start", "flaky")], "before")) == 1
    # In the middle of the parallel workers (just after the first one to finish): only the calls
    # whose answers came after the cut are made again.
    order = sorted(range(len(events)), key=lambda i: (events[i]["timestamp"], events[i]["_seq"]))
    timeline = [events[i] for i in order]
    cut = next(i for i, e in enumerate(timeline) if e["type"] == "agent:end" and e["agentId"] == "worker")
    later = sum(e["type"] == "model:call:end" for e in timeline[cut + 1 :])
    assert 0 < later < 7
    assert replay_calls(rewind(url, trace_id, timeline[cut]["trace"]["spanId"], "after")) == later
