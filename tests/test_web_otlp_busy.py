"""One small trace posted while a big OTLP ingest is pending, against a real `devtool serve` (issue 43):
it is derived in its append (a small trace exported whole), so it is listed and shows its spans
without waiting for the big ingest's derive; the big one is derived afterwards, every run once, as a
plain ingest derives it.

The server runs with `--live-interval 3600`: the derive that follows the appends runs once, after the
first trace, and then not again for an hour, so what the test posts after stays pending until a
request derives it, whatever the machine's speed. Which runs are derived is read from the runs
stream (`/live/runs`), which derives nothing: resumed from 0, its first message lists every run with
a summary.
"""

from __future__ import annotations

import re
import urllib.request
from pathlib import Path
from typing import Any

import orjson

from devtool.store import Store
from testkit.served import Served, serving
from testkit.sse import SseStream
from tests.otlp_factory import request, span

BIG = 200  # traces in the big ingest, of SPANS spans each
SPANS = 6


def trace_id(number: int) -> str:
    return f"{number:032x}"


def agent(number: int, *, late: bool = False) -> list[dict[str, Any]]:
    """A trace of SPANS spans, a root and its children (or, `late`, one more child of that root)."""
    trace, root = trace_id(number), f"{number:08x}{0:08x}"
    children = [
        span(f"step {n}", {"step": n}, trace=trace, sid=f"{number:08x}{n:08x}", parent=root, start_ms=n, duration_ms=1)
        for n in range(1, SPANS)
    ]
    if late:
        return [span("late step", trace=trace, sid=f"{number:08x}{99:08x}", parent=root, start_ms=SPANS)]
    return [*children, span("agent", trace=trace, sid=root, start_ms=0, duration_ms=SPANS + 1)]


def post(server: Served, spans: list[dict[str, Any]]) -> None:
    sent = urllib.request.Request(
        f"{server.url}v1/traces", data=orjson.dumps(request(*spans)), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(sent, timeout=60) as answer:
        assert answer.status == 200
        assert orjson.loads(answer.read()).get("partialSuccess", {}).get("rejectedSpans", 0) in (0, "0")


def get(server: Served, path: str) -> str:
    with urllib.request.urlopen(f"{server.url}{path.lstrip('/')}", timeout=120) as answer:
        assert answer.status == 200
        return str(answer.read().decode())


def derived(server: Served, *, until: str | None = None) -> set[str]:
    """The runs with a summary (derived), from the runs stream resumed from 0: its first message, or,
    with `until`, its messages until that run is among them."""
    stream = SseStream(f"{server.url}live/runs", last_event_id="0", timeout=60)
    seen: set[str] = set()
    try:
        for message in stream.messages():
            if message.event == "runs":
                seen.update(message.json()["traces"])
                if until is None or until in seen:
                    return seen
    finally:
        stream.close()
    raise AssertionError("the runs stream ended")


def header_spans(html: str) -> tuple[str, int]:
    status = re.search(r"s-(running|completed|failed)", html)
    count = re.search(r"<dt>spans</dt><dd>([\d,]+)</dd>", html)
    assert status is not None, html
    assert count is not None, html
    return status.group(1), int(count.group(1).replace(",", ""))


def stored(db: Path) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Each run's summary and each span's derived columns, as the store holds them."""
    store = Store(db)
    try:
        runs = store.query("SELECT trace_id, name, status, events, spans, running, depth FROM runs ORDER BY 1")
        spans = store.query(
            "SELECT trace_id, span_id, parent_span_id, kind, status, events, depth, frame_parent_id, frame_children "
            "FROM spans ORDER BY 1, 2"
        )
    finally:
        store.close()
    return runs, spans


def test_a_small_trace_posted_while_a_big_ingest_is_pending_shows_at_once_and_the_big_one_derives_once(
    tmp_path: Path,
) -> None:
    first, small = 1, 2
    big = [one for number in range(10, 10 + BIG) for one in agent(number)]
    with serving(tmp_path / "busy.duckdb", "--live-interval", "3600", log=tmp_path / "busy.log") as server:
        post(server, agent(first))
        # A small trace exported whole: derived in its append; the derive that follows waits an hour.
        assert derived(server, until=trace_id(first)) == {trace_id(first)}
        post(server, big)
        post(server, agent(small))
        assert derived(server) == {trace_id(first), trace_id(small)}  # the big ingest is pending

        # The small run's view waits for nothing: completed, with all its spans, and listed.
        assert header_spans(get(server, f"/runs/{trace_id(small)}/header")) == ("completed", SPANS)
        assert derived(server) == {trace_id(first), trace_id(small)}  # the big ingest is still pending
        page = get(server, f"/runs/{trace_id(small)}")
        assert "step 5" in page
        assert "late step" not in page

        # One more span of the small run while the big ingest is pending: derived with it, once.
        post(server, agent(small, late=True))
        get(server, "/")  # the runs list waits for everything pending
        everything = {trace_id(n) for n in (first, small, *range(10, 10 + BIG))}
        assert derived(server) == everything
        assert header_spans(get(server, f"/runs/{trace_id(small)}/header")) == ("completed", SPANS + 1)
        assert "Traceback" not in server.output()

    # The same posts to a server that derives as they come: the same runs, span for span.
    with serving(tmp_path / "plain.duckdb", log=tmp_path / "plain.log") as server:
        for spans in (agent(first), big, agent(small), agent(small, late=True)):
            post(server, spans)
        get(server, "/")
    busy_runs, busy_spans = stored(tmp_path / "busy.duckdb")
    plain_runs, plain_spans = stored(tmp_path / "plain.duckdb")
    assert len(busy_runs) == BIG + 2
    assert len(busy_spans) == (BIG + 2) * SPANS + 1  # no span twice
    assert busy_runs == plain_runs
    assert busy_spans == plain_spans
