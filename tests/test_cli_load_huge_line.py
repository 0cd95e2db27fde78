"""A line between 64 and 512 MiB in a loaded file: a bad line named by its number and the 64 MiB rule
(never "DuckDB ran out of memory"), and `--bad-lines skip` keeps the file's good lines (a real
`devtool load` child process on a real file)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from devtool.store import Store
from testkit.checkout import child_env
from tests.conftest import Trace

HUGE_MIB = 100


def huge_line_file(path: Path) -> tuple[Trace, int]:
    """A run's events, and before its second a well-formed event whose prop is `HUGE_MIB` MiB of text
    (line 2); the run and the number of the huge line."""
    t = Trace()
    root = t.start("agent", agentId="writer")
    t.end(t.start("turn", root, step=0))
    t.end(root)
    events = [json.dumps(event).encode() for event in t.events]
    head, tail = json.dumps({**t.events[1], "props": {"note": "<<>>"}}).encode().split(b"<<>>")
    with path.open("wb") as out:
        out.write(events[0] + b"\n")
        out.write(head)
        block = b"x" * (1 << 20)
        for _ in range(HUGE_MIB):
            out.write(block)
        out.write(tail + b"\n")
        out.writelines(event + b"\n" for event in events[1:])
    return t, 2


def load(db: Path, path: Path, *options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "devtool", "load", "--db", str(db), *options, str(path)],
        capture_output=True,
        text=True,
        timeout=600,
        env=child_env(),
        check=False,
    )


@pytest.mark.slow
def test_a_line_over_64_mib_is_a_bad_line_named_by_number(tmp_path: Path) -> None:
    path = tmp_path / "huge.jsonl"
    t, line = huge_line_file(path)
    db = tmp_path / "s.duckdb"

    refused = load(db, path)
    assert refused.returncode == 2, refused.stderr
    assert "out of memory" not in refused.stderr
    assert "--memory-limit" not in refused.stderr
    assert str(path) in refused.stderr
    assert f"line {line}: is {HUGE_MIB} MiB long, over the 64 MiB limit of one line" in refused.stderr

    skipped = load(db, path, "--bad-lines", "skip")
    assert skipped.returncode == 0, skipped.stderr
    assert f"{path}:{line}: skipped: is {HUGE_MIB} MiB long, over the 64 MiB limit" in skipped.stderr
    store = Store(db)
    try:
        stored = store.query("SELECT count(*) FROM events WHERE trace_id = ?", [t.trace_id])[0][0]
    finally:
        store.close()
    assert stored == len(t.events)  # every good line, the huge one left out
