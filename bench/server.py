"""A real `devtool serve` for the page benchmarks, and a GET that reads the server's own time."""

from __future__ import annotations

import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path


def serve(db: Path, files: list[Path], *options: str) -> tuple[subprocess.Popen[str], str, float]:
    """Start `devtool serve --db DB OPTIONS FILES` (it loads them first); its URL and how long it took."""
    began = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "devtool", "serve", "--port", "0", "--db", str(db), *options, *map(str, files)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    first = process.stdout.readline()
    if not first.startswith("DevTool at "):
        raise SystemExit(f"devtool serve did not start: {first}{process.stderr.read() if process.stderr else ''}")
    return process, first.removeprefix("DevTool at ").strip(), time.perf_counter() - began


def get(url: str, *, htmx: bool = False, accept: str | None = None) -> tuple[float, bytes]:
    """The server's time for `url` (its `Server-Timing`, in ms) and the body."""
    headers = {"HX-Request": "true"} if htmx else {}
    if accept:
        headers["Accept"] = accept
    request = urllib.request.Request(url, headers=headers)
    with urllib.request.urlopen(request, timeout=120) as response:
        timing = response.headers.get("Server-Timing", "")
        body = response.read()
    found = re.search(r"dur=([0-9.]+)", timing)
    if found is None:
        raise SystemExit(f"{url}: no Server-Timing header")
    return float(found.group(1)), body
