"""`devtool demo` as a user starts it (`make demo`), for the browser tests of the pages it serves."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from testkit.served import Served, launch


@contextmanager
def running_demo(home: Path) -> Iterator[Served]:
    """`devtool demo --port 0` with its data home in `home`: it records, loads and serves the demo data."""
    home.mkdir(parents=True, exist_ok=True)
    env = {"XDG_DATA_HOME": str(home), "PATH": "/usr/bin:/bin"}
    served = launch(["demo", "--port", "0"], db=home / "devtool" / "demo.duckdb", log=home / "demo.log", env=env)
    try:
        yield served
    finally:
        served.stop()


def demo_traces(home: Path) -> dict[str, str]:
    """The trace ids of the runs `devtool demo` recorded in `home`, by file (`research`, `release-check`)."""
    data = home / "devtool" / "demo-data"
    return {
        name: json.loads((data / f"{name}.trace.jsonl").read_text().splitlines()[0])["trace"]["traceId"]
        for name in ("research", "release-check")
    }
