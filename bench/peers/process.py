"""A system under test as a child process: started on a free port, timed to its first page, its process
tree's CPU and peak memory (RSS) sampled, its storage measured, and stopped."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bench.bench_live import _children, cpu_seconds

PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def tree_rss(pid: int) -> int:
    """Resident bytes of `pid` and its descendants now."""
    total = 0
    for each in [pid, *_descendants(pid)]:
        try:
            total += int(Path(f"/proc/{each}/statm").read_text().split()[1]) * PAGE_SIZE
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total


def _descendants(pid: int) -> list[int]:
    found = []
    for child in _children(pid):
        found.append(child)
        found.extend(_descendants(child))
    return found


@dataclass
class Running:
    """A started system: its base URL (no trailing slash), process, data folder and what was sampled."""

    url: str
    process: subprocess.Popen[bytes]
    data: Path
    cold_start: float  # s from the spawn to its first page answering 200
    peak_rss: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)

    def sample(self, every: float = 0.05) -> None:
        """Track the process tree's peak RSS in a thread until `stop`."""

        def loop() -> None:
            while not self._stop.wait(every):
                self.peak_rss = max(self.peak_rss, tree_rss(self.process.pid))

        threading.Thread(target=loop, daemon=True).start()

    def cpu(self) -> float:
        return cpu_seconds(self.process.pid)

    def storage(self) -> int:
        return sum(path.stat().st_size for path in self.data.rglob("*") if path.is_file())

    def stop(self) -> None:
        self._stop.set()
        if self.process.poll() is None:
            # The whole group: the peers' servers run workers of their own.
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


def start(
    command: Sequence[str], url: str, first_page: str, data: Path, env: dict[str, str], timeout: float = 180
) -> Running:
    """Spawn `command` (its output to `data`/server.log) and wait for `url + first_page` to answer 200."""
    data.mkdir(parents=True, exist_ok=True)
    began = time.perf_counter()
    with (data.parent / f"{data.name}.log").open("ab") as log:
        process = subprocess.Popen(
            list(command), stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **env}, start_new_session=True
        )
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"{command[0]} ended with {process.returncode}: see {data.parent / data.name}.log")
        try:
            with urllib.request.urlopen(url + first_page, timeout=10) as answer:
                if answer.status == 200:
                    answer.read()
                    break
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        if time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"{command[0]} did not answer {first_page} within {timeout} s")
        time.sleep(0.05)
    running = Running(url, process, data, time.perf_counter() - began)
    running.sample()
    settle(running)
    return running


def settle(running: Running, idle: float = 0.1, longest: float = 180) -> None:
    """Wait until the process tree is idle (under `idle` of a core over a second): a server whose first
    page answers may still be starting its other workers (MLflow's uvicorn starts four), and the
    measurements after must not pay for that."""
    deadline = time.monotonic() + longest
    while time.monotonic() < deadline:
        cpu = running.cpu()
        time.sleep(1)
        if running.cpu() - cpu < idle:
            return
