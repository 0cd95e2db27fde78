"""`devtool demo` as a user runs it: a real child process records, loads and serves the demo data."""

from __future__ import annotations

import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from devtool.store import Store
from testkit.checkout import child_env
from tests.web_runs import html


@contextmanager
def demo(home: Path, *args: str) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """`devtool demo --port 0 ARGS`, with its data home in `home`, until it serves; stopped afterwards."""
    process = subprocess.Popen(
        [sys.executable, "-m", "devtool", "demo", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env({"XDG_DATA_HOME": str(home), "PATH": "/usr/bin:/bin"}),
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        assert first.startswith("DevTool at "), first + (process.stderr.read() if process.stderr else "")
        yield first.removeprefix("DevTool at ").strip(), process
    finally:
        process.terminate()
        process.wait(timeout=20)


def run_rows(url: str) -> dict[str, str]:
    """The runs page's rows: id → name."""
    with urllib.request.urlopen(url, timeout=10) as response:
        page = html(response.read().decode())
    return {row.attributes["data-run-id"] or "": row.css_first(".run-title").text() for row in page.css("tr.run-row")}


def test_demo_records_once_and_serves(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with demo(home) as (url, process):
        first = run_rows(url)
    stderr = process.stderr.read() if process.stderr else ""
    assert "devtool demo: recording the demo runs into" in stderr
    assert "loaded 5 of 5 files" in stderr
    assert sorted(first.values()) == ["billing-ops", "reconciler", "release-checker", "research-lead", "research-lead"]
    db = home / "devtool" / "demo.duckdb"
    assert db.is_file()
    assert (home / "devtool" / "demo-data" / "billing-ops.jsonl").is_file()

    with demo(home) as (url, process):
        again = run_rows(url)
    stderr = process.stderr.read() if process.stderr else ""
    assert "recording" not in stderr
    assert "5 files already loaded" in stderr
    assert again == first  # the same runs, not a second copy of them

    with demo(home, "--fresh") as (url, _):
        fresh = run_rows(url)
    assert sorted(fresh.values()) == sorted(first.values())
    assert not set(fresh) - {"billing-ops"} & set(first)  # newly recorded runs, the old ones gone


def test_fresh_never_deletes_a_database_it_did_not_make(tmp_path: Path) -> None:
    mine = tmp_path / "mine.duckdb"
    Store(mine).close()
    result = subprocess.run(
        [sys.executable, "-m", "devtool", "demo", "--db", str(mine), "--fresh", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"devtool demo: error: {mine} is not a demo database (it has no mine-data/ beside it): --fresh only "
        "replaces the database `devtool demo` made; pick another --db"
    )
    assert mine.is_file()


@pytest.mark.parametrize("port", ["70000", "-1"])
def test_a_bad_port_is_one_line(tmp_path: Path, port: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "devtool", "demo", "--db", str(tmp_path / "d.duckdb"), "--port", port],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr == f"devtool demo: error: --port {port} is not a port number (0-65535)\n"
    assert not (tmp_path / "d-data").exists()  # refused before recording anything
