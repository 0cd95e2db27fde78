"""A DevTool started on a full disk says so in one line, and starts once there is room again (real
`devtool serve` processes on a small tmpfs; the mount needs root, so elsewhere these are skipped)."""

from __future__ import annotations

import contextlib
import errno
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from devtool.store import Store
from devtool.store.live_append import append_events
from testkit.checkout import child_env
from tests.conftest import Trace, running_serve


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """An 8 MiB tmpfs mounted at a folder of `tmp_path`."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(disk)], capture_output=True, text=True, check=False
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here (needs root): {mounted.stderr.strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def fill(disk: Path) -> Path:
    """Fill `disk` to its last byte; the file that fills it."""
    filler = disk / "filler"
    with filler.open("wb", buffering=0) as out:
        for size in (1 << 16, 1 << 12, 1):
            with contextlib.suppress(OSError):
                while out.write(b"\0" * size):
                    pass
        with pytest.raises(OSError, match="No space left on device") as full:
            out.write(b"\0")
    assert full.value.errno == errno.ENOSPC
    return filler


def serve(db: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "devtool", "serve", "--port", "0", "--db", str(db)],
        capture_output=True,
        text=True,
        timeout=120,
        env=child_env(),
        check=False,
    )


def test_a_restart_on_a_full_disk_is_one_line_and_keeps_the_store(small_disk: Path) -> None:
    db = small_disk / "s.duckdb"
    t = Trace()
    t.span("agent", agentId="billing")
    store = Store(db)
    try:
        # Stored, not derived yet: what a server killed mid-append leaves, derived at the next start.
        append_events(store, t.events, derive=False)
    finally:
        store.close()
    filler = fill(small_disk)

    done = serve(db)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "cannot rollback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("devtool serve: error: no space left on device: "), line
    assert str(small_disk) in line

    filler.unlink()
    with running_serve(db) as server, urllib.request.urlopen(f"{server.url}runs/{t.trace_id}", timeout=30) as page:
        assert page.status == 200
        assert b"billing" in page.read()


def test_a_new_store_on_a_full_disk_is_one_line(small_disk: Path) -> None:
    fill(small_disk)
    done = serve(small_disk / "new.duckdb")
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("devtool serve: error: no space left on device: "), line
