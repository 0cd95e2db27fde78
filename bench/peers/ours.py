"""The DevTool of this checkout as the peers bench sees it: `devtool serve` on a fresh DuckDB file.

Visible: the runs list (`/?status=completed&page=N`, the fragment the page swaps in) lists every
trace of the workload as completed (its last page has the last of them); then, checked once and not
timed unless it fails, each has as many events as the others (a trace missing spans would show
fewer). One trace: its run header (`/runs/<id>/header`) says completed, with all its
spans. Opening a trace: its run page (`/runs/<id>`), the page a user opens. Search: the runs list's
`?q=`, every page of it."""

from __future__ import annotations

import re
import sys
import urllib.error
from pathlib import Path

from bench.peers import process, web
from bench.server import child_env

NAME = "ours"
HEADERS: dict[str, str] = {}
FRAGMENT = {"HX-Request": "true"}
ROW = re.compile(r'<tr class="run-row[^"]*" data-status="(\w+)"[^>]*data-run-id="([0-9a-f]+)"(.*?)</tr>', re.S)
EVENTS = re.compile(r'<td class="num">([\d,]+)</td>\s*<td class="run-source"')
PAGE = 100  # the runs list's page


def start(data: Path) -> process.Running:
    port = process.free_port()
    command = [sys.executable, "-m", "devtool", "serve", "--port", str(port), "--db", str(data / "bench.duckdb")]
    return process.start(command, f"http://127.0.0.1:{port}", "/", data, child_env(XDG_DATA_HOME=str(data / "xdg")))


def _rows(running: process.Running, query: str, page: int) -> tuple[list[tuple[str, str, int]], bool]:
    html = web.get(f"{running.url}/?{query}&page={page}", FRAGMENT).decode()
    rows = []
    for status, run_id, rest in ROW.findall(html):
        events = EVENTS.search(rest)
        rows.append((status, run_id, int(events.group(1).replace(",", "")) if events else 0))
    return rows, "Older →" in html


def visible(running: process.Running, traces: int, spans: int) -> bool:
    last = max((traces + PAGE - 1) // PAGE, 1)
    rows, more = _rows(running, "status=completed", last)
    return not more and len(rows) == traces - (last - 1) * PAGE


def complete(running: process.Running, traces: int, spans: int) -> bool:
    """Every page of the list: the traces all have as many events (a trace missing spans has fewer)."""
    last = max((traces + PAGE - 1) // PAGE, 1)
    events = {count for page in range(1, last + 1) for _, _, count in _rows(running, "status=completed", page)[0]}
    return len(events) == 1 and 0 not in events  # 0: the events column was not found


def trace_visible(running: process.Running, trace_id: str, spans: int) -> bool:
    try:
        html = web.get(f"{running.url}/runs/{trace_id}/header", FRAGMENT).decode()
    except urllib.error.HTTPError as error:
        if error.code == 404:
            return False
        raise
    found = re.search(r"<dt>spans</dt><dd>([\d,]+)</dd>", html)
    return "s-completed" in html and found is not None and int(found.group(1).replace(",", "")) == spans


def open_trace(running: process.Running, trace_id: str) -> int:
    """Open the run page; the bytes it answered."""
    return len(web.get(f"{running.url}/runs/{trace_id}"))


def search(running: process.Running, word: str) -> int:
    found, page, more = 0, 1, True
    while more:
        rows, more = _rows(running, f"q={word}", page)
        found += len(rows)
        page += 1
    return found
