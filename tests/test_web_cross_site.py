"""The cross-site request matrix, against a real `devtool serve` on loopback: every endpoint that
changes something (taken from `ROUTES`), asked the ways another site's page (or a page under a
rebound DNS name) can make a browser ask, in each content type a form or `fetch` sends without a
preflight, is refused with a 403 and changes nothing; the same request from the DevTool's own page
goes through (so the 403s are the rule at work, not a broken endpoint). And the GETs another page can
make a browser send (`<img>`, `<script>`, a link) answer without hanging, hostile windows included.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from starlette.routing import Route

from devtool.store import Store
from devtool.web.auth import CSRF_FIELD
from devtool.web.routes import ROUTES
from testkit.fuzz import HANG_SECONDS
from testkit.served import serving
from tests.conftest import Trace
from tests.web_runs import html, one

EVIL = "https://evil.example"


def attacks(url: str) -> dict[str, dict[str, str]]:
    """The headers of each way a browser can be made to send a request to `url` from elsewhere."""
    host = url.split("//", 1)[1].rstrip("/")
    port = host.rsplit(":", 1)[1]
    return {
        "another site": {"Origin": EVIL, "Sec-Fetch-Site": "cross-site", "Referer": f"{EVIL}/x"},
        "a sandboxed frame or data: URL": {"Origin": "null", "Sec-Fetch-Site": "cross-site"},
        "an old browser, Referer only": {"Referer": f"{EVIL}/x"},
        "another app on this machine": {"Origin": "http://127.0.0.1:1", "Sec-Fetch-Site": "same-site"},
        "localhost under another port": {"Origin": f"http://localhost:{int(port) + 1}", "Sec-Fetch-Site": "same-site"},
        "a rebound DNS name": {"Host": f"evil.example:{port}", "Origin": f"http://evil.example:{port}"},
        "this origin, no page token": {"Origin": url.rstrip("/"), "Sec-Fetch-Site": "same-origin"},
    }


BODIES: dict[str, dict[str, Any]] = {
    "urlencoded form": {"data": {"span_id": "x", "anchor": "after", "confirm": "x", "token": "x", "entry": "x"}},
    "multipart form": {"files": {"file": ("t.jsonl", b"{}\n")}, "data": {"span_id": "x"}},
    "text/plain": {"content": b"span_id=x", "headers": {"Content-Type": "text/plain"}},
}


def changing_paths() -> list[str]:
    return sorted(
        {r.path for r in ROUTES if isinstance(r, Route) and (r.methods or set()) - {"GET", "HEAD", "OPTIONS"}}
    )


def fill(path: str, ids: dict[str, str]) -> str:
    for name, value in ids.items():
        path = path.replace("{" + name + "}", value)
    return path


def counts(db: Path) -> dict[str, int]:
    store = Store(db)
    try:
        tables = ("events", "sources", "rewind.snapshots", "journal_entries")
        return {table: store.query(f"SELECT count(*) FROM {table}")[0][0] for table in tables}
    finally:
        store.close()


@pytest.fixture
def targets(tmp_path: Path) -> dict[str, Any]:
    """A database with a run and a snapshot of it, and what it holds; the server is stopped."""
    t = Trace()
    root = t.start("agent", agentId="target")
    child = t.start("turn", root)
    t.end(child)
    t.end(root)
    db = tmp_path / "x.duckdb"
    with serving(db, log=tmp_path / "serve.log") as server:
        # A program on this machine (no browser headers) stores a run.
        assert httpx.post(f"{server.url}api/v1/traces", json=t.events, timeout=30).status_code == 200
        # The control: the DevTool's own page, with its token, may rewind it.
        page = httpx.get(f"{server.url}runs/{t.trace_id}", timeout=30)
        token = json.loads(str(one(html(page.text), "body").attributes["hx-headers"]))["X-DevTool-CSRF"]
        own = {"Origin": server.url.rstrip("/"), "Sec-Fetch-Site": "same-origin", "Cookie": "x=1"}
        form = {"span_id": child, "anchor": "after", CSRF_FIELD: token}
        made = httpx.post(f"{server.url}runs/{t.trace_id}/rewind", data=form, headers=own, timeout=30)
        assert made.status_code == 303, made.text
    ids = {
        "trace_id:id": t.trace_id,
        "snapshot_id": made.headers["location"].rsplit("/", 1)[1],
        "process_id:id": t.trace_id,
    }
    return {"db": db, "ids": ids, "log": tmp_path / "serve.log", "held": counts(db)}


def test_every_changing_endpoint_refuses_every_cross_site_request_and_changes_nothing(targets: dict[str, Any]) -> None:
    paths = changing_paths()
    assert "/runs/{trace_id:id}/rewind" in paths
    assert "/api/v1/traces" in paths
    wrong: list[str] = []
    tried = 0
    with serving(targets["db"], log=targets["log"]) as server, httpx.Client(base_url=server.url, timeout=30) as client:
        for path in paths:
            url = fill(path, targets["ids"]).lstrip("/")
            for attack, headers in attacks(server.url).items():
                if path == "/login" and attack == "this origin, no page token":
                    continue  # signing in cannot carry a token the browser does not have yet
                for body_kind, body in BODIES.items():
                    extra = body.get("headers", {})
                    kwargs = {key: value for key, value in body.items() if key != "headers"}
                    answer = client.post(url, headers={**headers, **extra}, **kwargs)
                    tried += 1
                    # A rebound name is refused before anything else, as not addressed to this server.
                    refused = 421 if attack == "a rebound DNS name" else 403
                    if answer.status_code != refused or "set-cookie" in answer.headers:
                        wrong.append(f"{path} from {attack} as {body_kind}: {answer.status_code}")
    assert wrong == []
    assert tried >= (len(paths) * 7 - 1) * 3
    assert counts(targets["db"]) == targets["held"]


IMG = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Dest": "image", "Referer": f"{EVIL}/"}
WINDOWS = [
    "",
    "?start=10000000000000000&end=10000000000000002",
    "?start=-1e300&end=1e300",
    "?start=1790000000000&end=1790000000000.000001",
]


def test_what_another_page_can_make_a_browser_get_answers_without_hanging(targets: dict[str, Any]) -> None:
    gets = sorted(
        r.path
        for r in ROUTES
        if isinstance(r, Route)
        and "GET" in (r.methods or ())
        and "live" not in r.path.split("/")  # streams stay open, as they should
    )
    ids = {**targets["ids"], "span_id": "x", "replay_id": "0" * 32}
    slow: list[str] = []
    with serving(targets["db"], log=targets["log"]) as server, httpx.Client(base_url=server.url, timeout=30) as client:
        for path in gets:
            for window in WINDOWS:
                began = time.perf_counter()
                try:
                    answer = client.get(fill(path, ids).lstrip("/") + window, headers=IMG, timeout=HANG_SECONDS)
                    status = answer.status_code
                except httpx.TimeoutException:
                    status = 0
                took = time.perf_counter() - began
                if not 0 < status < 500 or took > HANG_SECONDS:
                    slow.append(f"{path}{window}: {status or 'no answer'} in {took:.2f} s")
        assert client.get("", headers=IMG).status_code == 200  # and it is still up
    assert slow == []
