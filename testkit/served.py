"""A real `devtool serve` (or `devtool demo`) child process for tests, e2e tests, soaks and benchmarks:
started on a free port, its log (stderr) kept in a file, and stopped politely or killed (SIGKILL), as
a crash test needs."""

from __future__ import annotations

import os
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from testkit.checkout import child_env


@dataclass
class Served:
    """A running `devtool serve`: its URL (ending in `/`), database, process and log (its stderr)."""

    url: str
    db: Path
    process: subprocess.Popen[str]
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def kill(self) -> None:
        """SIGKILL: no shutdown, no flush, as a crash or an OOM killer would stop it."""
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()


def start(
    db: Path,
    *args: str,
    log: Path,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    ssl_context: ssl.SSLContext | None = None,
) -> Served:
    """Start `devtool serve --port 0 --db DB ARGS` (in `cwd`); return once it answers HTTP (HTTPS:
    checked with `ssl_context`)."""
    command = ["serve", "--port", "0", "--db", str(db), *args]
    return launch(command, db=db, log=log, env=env, cwd=cwd, ssl_context=ssl_context)


def launch(
    command: Sequence[str],
    *,
    db: Path,
    log: Path,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 30,
    ssl_context: ssl.SSLContext | None = None,
) -> Served:
    """Start `python -m devtool COMMAND` (a command that serves `db` and prints `DevTool at URL` first,
    as `serve` and `demo` do), its stderr appended to `log`; return once it answers HTTP."""
    with log.open("a") as handle:
        process = subprocess.Popen(
            [sys.executable, "-u", "-m", "devtool", *command],
            stdout=subprocess.PIPE,
            stderr=handle,
            text=True,
            env=child_env(env),
            cwd=cwd,
        )
    assert process.stdout is not None
    first = process.stdout.readline()
    if not first.startswith("DevTool at "):
        process.kill()
        process.wait()
        raise RuntimeError(f"devtool {command[0]} did not start:\n{first}{log.read_text(errors='replace')}")
    served = Served(first.split(" at ", 1)[1].strip(), db, process, log)
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(served.url, timeout=5, context=ssl_context):
                return served
        except urllib.error.HTTPError:
            return served  # it answers HTTP (with a team token: 401 and the login page)
        except OSError:
            if time.monotonic() > deadline:
                served.kill()
                raise
            time.sleep(0.05)


@contextmanager
def serving(
    db: Path,
    *args: str,
    log: Path,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    ssl_context: ssl.SSLContext | None = None,
) -> Iterator[Served]:
    """`start`, and stop it on the way out."""
    served = start(db, *args, log=log, env=env, cwd=cwd, ssl_context=ssl_context)
    try:
        yield served
    finally:
        served.stop()
