"""A real `devtool serve` for the page benchmarks, and a GET that reads the server's own time."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # the checkout this bench is in


def child_env(root: Path = ROOT, **extra: str) -> dict[str, str]:
    """The environment of a DevTool a bench starts: it and its own children run the code of `root` (this
    checkout, unless a bench serves another one beside it: `bench_pages_ab.py`).

    Without it, an A/B against another checkout went wrong silently: `python -m` (a child `devtool
    serve`, or `-m bench.peers`) puts the working folder first on the path, ahead of `PYTHONPATH`,
    and each bench script puts its own checkout first, so which code ran depended on the folder the
    bench was started in. `PYTHONSAFEPATH` keeps the working folder off every descendant's path.
    """
    path = os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path, "PYTHONSAFEPATH": "1", **extra}


def serve(db: Path, files: list[Path], *options: str, root: Path = ROOT) -> tuple[subprocess.Popen[str], str, float]:
    """Start `devtool serve --db DB OPTIONS FILES` (it loads them first) with `root`'s code; its URL and how
    long it took."""
    began = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "devtool", "serve", "--port", "0", "--db", str(db), *options, *map(str, files)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(root),
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
