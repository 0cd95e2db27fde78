"""The file beside a database that names the `devtool serve` owning it: private, and trusted only when
its server is alive and answers for that database."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

from devtool.cli.server_file import running_server, server_file
from tests.conftest import running_serve


def test_a_running_server_is_found_by_its_database_and_its_file_is_private(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    with running_serve(db) as server:
        found = running_server(db)
        path = server_file(db)
        mode = stat.S_IMODE(path.stat().st_mode)
        written = json.loads(path.read_text())
    assert found is not None
    assert found.url == server.url
    assert mode == 0o600  # the local token is for this user only
    assert (written["pid"], written["db"]) == (server.process.pid, str(db.resolve()))
    assert found.token == written["token"]
    assert running_server(db) is None  # stopped: its file is gone


def test_a_file_that_is_not_private_or_not_for_this_database_or_of_a_dead_server_is_ignored(tmp_path: Path) -> None:
    db, other = tmp_path / "s.duckdb", tmp_path / "other.duckdb"
    with running_serve(db):
        # Copied beside another database: the server answers for its own, not that one.
        shutil.copy(server_file(db), server_file(other))
        os.chmod(server_file(other), 0o600)
        assert running_server(other) is None
        # Readable by others: not a file `devtool serve` wrote.
        os.chmod(server_file(db), 0o644)
        assert running_server(db) is None
        os.chmod(server_file(db), 0o600)
        assert running_server(db) is not None
    # A server killed before it could take its file away: its process is gone.
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    left = {"url": "http://127.0.0.1:9/", "token": "t", "pid": int(dead.stdout), "db": str(db.resolve())}
    server_file(db).write_text(json.dumps(left))
    os.chmod(server_file(db), 0o600)
    assert running_server(db) is None
