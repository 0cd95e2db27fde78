"""A throw-away PostgreSQL cluster for the lake's tests and bench: Debian's `postgresql` (15), made with
`initdb` in a temporary folder, started by `pg_ctl` on a free port and a private socket folder (no TCP
listener), and stopped and removed at the end. PostgreSQL refuses to run as root: as root the cluster
is made and run as the `postgres` user, in a folder handed to it."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

BIN = Path("/usr/lib/postgresql/15/bin")
USER = "postgres"


@dataclass(frozen=True)
class Cluster:
    """A running cluster: its socket folder and port, and a database made for the test."""

    socket_dir: Path
    port: int
    dbname: str

    def catalog(self, dbname: str | None = None) -> str:
        """The `--lake` value for a DuckLake catalog in database `dbname` (default: the cluster's)."""
        return f"postgres:host={self.socket_dir} port={self.port} user={USER} dbname={dbname or self.dbname}"

    def createdb(self, dbname: str) -> str:
        """A new empty database in the cluster; its `--lake` value."""
        _run([str(BIN / "createdb"), "-h", str(self.socket_dir), "-p", str(self.port), "-U", USER, dbname])
        return self.catalog(dbname)


def _as_postgres(command: list[str]) -> list[str]:
    return ["runuser", "-u", USER, "--", *command] if os.geteuid() == 0 else command


def _run(command: list[str]) -> None:
    done = subprocess.run(_as_postgres(command), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}): {done.stderr.strip() or done.stdout}")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def cluster(dbname: str = "devtool") -> Iterator[Cluster]:
    """A new cluster with database `dbname`, stopped and deleted when the block ends."""
    if not (BIN / "initdb").exists():
        raise RuntimeError(f"PostgreSQL is not installed ({BIN}): `make postgres` (apt-get install postgresql)")
    folder = Path(tempfile.mkdtemp(prefix="devtool-pg-"))
    if os.geteuid() == 0:
        shutil.chown(folder, USER, USER)
    data, sockets = folder / "data", folder / "sock"
    port = _free_port()
    try:
        _run([str(BIN / "initdb"), "-D", str(data), "-U", USER, "-A", "trust", "--no-sync", "-E", "UTF8"])
        sockets.mkdir()
        if os.geteuid() == 0:
            shutil.chown(sockets, USER, USER)
        options = f"-p {port} -k {sockets} -c listen_addresses='' -c fsync=off -c max_connections=200"
        _run([str(BIN / "pg_ctl"), "-D", str(data), "-l", str(folder / "log"), "-o", options, "-w", "start"])
        try:
            made = Cluster(sockets, port, dbname)
            made.createdb(dbname)
            yield made
        finally:
            _run([str(BIN / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"])
    finally:
        shutil.rmtree(folder, ignore_errors=True)


class Lakes:
    """Fresh lakes in one cluster: each `new()` a database of its own and a data folder under `root`."""

    def __init__(self, made: Cluster, root: Path) -> None:
        self.cluster = made
        self.root = root
        self.made = 0

    def new(self) -> tuple[str, Path]:
        """A new empty lake: its `--lake` catalog and its `--lake-data` folder."""
        self.made += 1
        name = f"lake{self.made}"
        return self.cluster.createdb(name), self.root / name
