"""One definition of a valid event at every door: the same bad events, sent through HTTP ingest,
`devtool load`, `devtool serve --follow` and the upload form of a real server, get the same verdict,
at the same place, in the same words, and the good events around them are kept by every door."""

from __future__ import annotations

import json
import re
import shutil
import time
import urllib.request
from pathlib import Path
from typing import Any

import httpx2 as httpx

from devtool.store import Store
from devtool.store.event_gate import trace_event_problem
from testkit.served import serving
from tests.conftest import DevtoolRunner, Trace
from tests.web_runs import html


def deep(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth - 1):
        value = {"x": value}
    return value


def mixed_batch() -> tuple[list[dict[str, Any]], list[tuple[int, str]]]:
    """A run's events with bad ones among them, and (index, reason) of each bad one."""
    t = Trace()
    root = t.start("agent", agentId="doors")
    for step in range(3):
        t.span("turn", root, step=step)
    t.end(root)
    good = t.events
    span = good[1]["trace"]
    bad = [
        {**good[1], "timestamp": 1_790_000_000_000_000_000},  # nanoseconds
        {**good[2], "timestamp": 1_790_000_000},  # seconds
        {**good[3], "type": {"kind": "turn:start"}},
        {**good[4], "trace": {**span, "traceId": ["a", "list"]}},
        {**good[5], "props": deep(600)},
        {**good[6], "timestamp": 1e300},
    ]
    events: list[dict[str, Any]] = []
    for index, event in enumerate(good):
        events.append(event)
        if index < len(bad):
            events.append(bad[index])
    expected = [(i, reason) for i, event in enumerate(events) if (reason := trace_event_problem(event)) is not None]
    assert len(expected) == len(bad)
    return events, expected


def jsonl(events: list[dict[str, Any]]) -> bytes:
    # The standard library's writer: orjson will not write past 254 levels of nesting.
    return "".join(json.dumps(event) + "\n" for event in events).encode()


def test_every_door_refuses_the_same_events_in_the_same_words(devtool: DevtoolRunner, tmp_path: Path) -> None:
    events, expected = mixed_batch()
    good = len(events) - len(expected)
    trace = tmp_path / "mixed.jsonl"
    trace.write_bytes(jsonl(events))
    followed = tmp_path / "followed.jsonl"
    shutil.copy(trace, followed)

    # `devtool load`: refused whole by default, naming the first bad line; its good lines on request.
    refused = devtool("load", "--db", str(tmp_path / "load.duckdb"), str(trace))
    assert refused.returncode == 2
    first_index, first_reason = expected[0]
    assert f"{len(expected)} bad lines, nothing stored: line {first_index + 1}: {first_reason}" in refused.stderr
    loaded = devtool("load", "--db", str(tmp_path / "load.duckdb"), "--bad-lines", "skip", str(trace))
    assert loaded.returncode == 0, loaded.stderr
    at_load = [
        (int(line) - 1, reason) for line, reason in re.findall(r"mixed\.jsonl:(\d+): skipped: (.*)", loaded.stderr)
    ]
    assert f"{good} events" in loaded.stdout

    db = tmp_path / "served.duckdb"
    with serving(db, "--follow", str(followed), log=tmp_path / "serve.log") as served:
        answer = httpx.post(f"{served.url}api/v1/traces", content=json.dumps(events).encode(), timeout=30)
        assert answer.status_code == 422
        assert answer.json()["accepted"] == good
        at_ingest = [(item["index"], item["reason"]) for item in answer.json()["rejected"]]

        upload = httpx.post(
            f"{served.url}upload",
            files={"file": ("mixed.jsonl", trace.read_bytes())},
            data={"bad_lines": "skip"},
            timeout=30,
        )
        assert upload.status_code == 200
        skipped = [item.text() for item in html(upload.text).css(".upload-skipped li")]
        upload_message = " ".join(item.text() for item in html(upload.text).css(".upload-message"))
        at_upload = [(int(line) - 1, reason) for line, reason in (_split(item) for item in skipped)]

        deadline = time.monotonic() + 20
        while len(_followed(served.output())) < len(expected) and time.monotonic() < deadline:
            time.sleep(0.1)
        at_follow = _followed(served.output())
        with urllib.request.urlopen(served.url, timeout=10) as response:
            assert response.status == 200  # and the runs page is up

    assert at_ingest == at_load == at_follow == at_upload == expected
    store = Store(db)
    sources = dict(store.query("SELECT s.kind, count(*) FROM events JOIN sources s USING (source_id) GROUP BY 1"))
    store.close()
    # The followed file and the posted batch (live, each in its own text) kept every good event; the
    # upload, the followed file's very lines, added nothing (exactly-once) but still named its bad lines.
    assert sources == {"live": 2 * good}
    assert "already loaded" in upload_message


def _split(item: str) -> tuple[str, str]:
    found = re.fullmatch(r"line (\d+): skipped: (.*)", item.strip())
    assert found, item
    return found.group(1), found.group(2)


def _followed(log: str) -> list[tuple[int, str]]:
    return [(int(line) - 1, reason) for line, reason in re.findall(r"followed\.jsonl, line (\d+): (.*); skipped", log)]
