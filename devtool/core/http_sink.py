"""`HttpSink`: stream a run's events to a running DevTool, never slowing or failing the agent.

Events are queued in memory and posted in batches (`POST <url>` with a JSON array, the path and
body the TypeScript library's review exporter uses) by a background thread, when a batch is full
or a short interval has passed, and at the end of `run_with` (`flush`). A batch that cannot be
delivered after a few retries with backoff is spooled, in order, to a local JSONL file that
`devtool load` accepts, so nothing is lost when the DevTool is down, slow or restarted; a warning
says where, once. The agent's thread only ever appends to the queue.

A DevTool started with a team token wants it on every batch: `token=` (by default
`$DEVTOOL_TOKEN`) is sent as `Authorization: Bearer <token>`.

Standard library only: an instrumented agent installs nothing of the web stack.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
import urllib.error
import urllib.request
from collections import deque
from pathlib import Path

import orjson

from devtool.core.events import TraceEvent

logger = logging.getLogger("devtool.core")


def default_spool_dir() -> Path:
    data_home = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return data_home / "devtool" / "spool"


class HttpSink:
    """Posts events to `url` (a DevTool's `/api/v1/traces`) from a background thread."""

    def __init__(
        self,
        url: str,
        *,
        batch_size: int = 200,
        interval: float = 0.1,
        timeout: float = 2.0,
        retries: int = 3,
        flush_timeout: float = 5.0,
        spool: str | os.PathLike[str] | None = None,
        headers: dict[str, str] | None = None,
        token: str | None = None,
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"HttpSink needs an http(s) URL, got {url!r}")
        self.url = url
        self.batch_size = batch_size
        self.interval = interval
        self.timeout = timeout
        self.retries = retries
        self.flush_timeout = flush_timeout
        self.spool_path = Path(spool) if spool else default_spool_dir() / f"{os.getpid()}-{id(self):x}.jsonl"
        token = token if token is not None else os.environ.get("DEVTOOL_TOKEN") or None
        bearer = {"Authorization": f"Bearer {token}"} if token else {}
        self.headers = {"Content-Type": "application/json", **bearer, **(headers or {})}
        self.sent = 0
        self.spooled = 0
        self._queue: deque[TraceEvent] = deque()
        self._in_flight = 0
        self._wake = threading.Condition()
        self._closed = False
        self._warned = False
        self._thread = threading.Thread(target=self._run, name="devtool-http-sink", daemon=True)
        self._thread.start()
        atexit.register(self.close)

    def __call__(self, event: TraceEvent) -> None:
        with self._wake:
            self._queue.append(event)
            if len(self._queue) >= self.batch_size:
                self._wake.notify()

    def many(self, events: list[TraceEvent]) -> None:
        with self._wake:
            self._queue.extend(events)
            if len(self._queue) >= self.batch_size:
                self._wake.notify()

    def flush(self) -> None:
        """Wait (up to `flush_timeout`) until every queued event is delivered or spooled."""
        deadline = time.monotonic() + self.flush_timeout
        with self._wake:
            self._wake.notify()
            while self._queue or self._in_flight:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return
                self._wake.wait(remaining)

    def close(self) -> None:
        """Deliver what can be delivered within `flush_timeout`, spool the rest, stop the thread."""
        if self._closed:
            return
        self.flush()
        with self._wake:
            self._closed = True
            self._wake.notify_all()
        self._thread.join(self.flush_timeout)
        with self._wake:
            leftover = list(self._queue)
            self._queue.clear()
        if leftover:
            self._spool(leftover)
        atexit.unregister(self.close)

    def _run(self) -> None:
        while True:
            with self._wake:
                if not self._queue and not self._closed:
                    self._wake.wait(self.interval)
                if self._closed and not self._queue:
                    return
                batch = [self._queue.popleft() for _ in range(min(self.batch_size, len(self._queue)))]
                self._in_flight = len(batch)
            if batch:
                self._deliver(batch)
            with self._wake:
                self._in_flight = 0
                self._wake.notify_all()
            if self._closed:
                return

    def _deliver(self, batch: list[TraceEvent]) -> None:
        body = orjson.dumps(batch)
        delay = 0.05
        for attempt in range(self.retries + 1):
            try:
                request = urllib.request.Request(self.url, data=body, headers=self.headers, method="POST")  # noqa: S310
                with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310
                    response.read()
                self.sent += len(batch)
                return
            except urllib.error.HTTPError as exc:
                if exc.code == 413 and len(batch) > 1:
                    half = len(batch) // 2
                    self._deliver(batch[:half])
                    self._deliver(batch[half:])
                    return
                if 400 <= exc.code < 500:
                    # The DevTool kept the good events and named the bad ones: retrying cannot help.
                    self._warn(f"the DevTool at {self.url} refused part of a batch: {exc.code} {_body(exc)}")
                    return
            except (OSError, ValueError):
                pass
            if attempt < self.retries:
                time.sleep(delay)
                delay *= 2
        self._spool(batch)

    def _spool(self, batch: list[TraceEvent]) -> None:
        self.spool_path.parent.mkdir(parents=True, exist_ok=True)
        with self.spool_path.open("ab") as handle:
            handle.write(b"".join(orjson.dumps(event, option=orjson.OPT_APPEND_NEWLINE) for event in batch))
        self.spooled += len(batch)
        self._warn(
            f"the DevTool at {self.url} cannot be reached; events are spooled to {self.spool_path} "
            f"(load them with: devtool load {self.spool_path})"
        )

    def _warn(self, message: str) -> None:
        if not self._warned:
            self._warned = True
            logger.warning("devtool: %s", message)

    def __repr__(self) -> str:
        return f"HttpSink({self.url!r}, sent={self.sent}, spooled={self.spooled})"


def _body(error: urllib.error.HTTPError) -> str:
    try:
        return error.read(500).decode("utf-8", errors="replace")
    except OSError:
        return ""
