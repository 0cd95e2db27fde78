"""`devtool demo` as a user starts it (`make demo`), for the browser tests of the pages it serves."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from e2e.conftest import Server, _wait_for


@contextmanager
def running_demo(home: Path) -> Iterator[Server]:
    """`devtool demo --port 0` with its data home in `home`: it records, loads and serves the demo data."""
    log = home / "demo.log"
    home.mkdir(parents=True, exist_ok=True)
    with log.open("w") as handle:
        process = subprocess.Popen(
            [sys.executable, "-u", "-m", "devtool", "demo", "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=handle,
            text=True,
            env={"XDG_DATA_HOME": str(home), "PATH": "/usr/bin:/bin"},
        )
        try:
            assert process.stdout is not None
            first = process.stdout.readline()
            if not first.startswith("DevTool at "):
                raise AssertionError(f"devtool demo did not start:\n{first}{log.read_text()}")
            server = Server(first.split(" at ", 1)[1].strip(), home / "devtool" / "demo.duckdb", process, log)
            _wait_for(server.url)
            yield server
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
