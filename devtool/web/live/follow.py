"""`devtool serve --follow PATH.jsonl`: tail a trace file an agent is writing into the live store.

`TailReader` reads the complete lines added to a file since its last read:
- a last line without its newline is kept back until the writer finishes it (never half a line);
- a file that shrinks under the same inode (truncated, or `copytruncate` rotation) is read again
  from its start;
- a new file at the path (the old one renamed or deleted: rotation) is read from its start, after
  what the old file still held is read to its end;
- a file that does not exist yet is waited for.
Each line goes through the store's event gate (`read_line`); a bad line is skipped with a warning
naming the file and line (a tail cannot refuse a file that is still being written).

`Follower` polls a `TailReader` every `interval` seconds in a worker thread and hands the events to
the appender, the same path as `POST /api/v1/traces`, so they are stored and streamed alike.
Restarting a server that follows the same file into the same database does not store its events
twice: the events already stored from that path are skipped (the file is recognised by its first
event; a different file at that path is read in full).
"""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING

from starlette.concurrency import run_in_threadpool

from devtool.store import Store
from devtool.store.event_gate import CheckedEvent, Refused, read_line
from devtool.store.queries.live import stream_resume_point

if TYPE_CHECKING:
    from devtool.web.live.appender import Appender

logger = logging.getLogger("devtool.web")

# The most bytes one read takes in; a line longer than MAX_LINE is skipped as broken.
READ_CHUNK = 8 * 1024 * 1024
MAX_LINE = 64 * 1024 * 1024


@dataclass
class Lines:
    """What one read found: the TraceEvents, and the bad lines as `(line number, reason)`."""

    events: list[CheckedEvent] = field(default_factory=list)
    problems: list[tuple[int, str]] = field(default_factory=list)


class TailReader:
    """The complete lines written to `path` since the last `read`, across truncation and rotation."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: IO[bytes] | None = None
        self._identity: tuple[int, int] | None = None
        self._offset = 0
        self._partial = b""
        self._line = 0  # lines of the current file consumed so far
        self._skipping_long_line = False
        self.restarts = 0  # times the file was truncated or replaced

    def read(self) -> Lines:
        """The events of the lines completed since the last read (at most `READ_CHUNK` bytes of them)."""
        found = Lines()
        try:
            status: os.stat_result | None = os.stat(self.path)
        except FileNotFoundError:
            status = None
        if self._file is not None and (status is None or (status.st_dev, status.st_ino) != self._identity):
            # Rotated or deleted: what the writer put in the old file before it moved still counts.
            if self._read_chunk(found):
                return found
            if self._partial:
                # The writer moved on without ending its last line: keep it only if it is whole JSON.
                self._line += 1
                self._parse(self._partial, found, torn=True)
            self._close()
            self.restarts += 1
            if status is not None:
                logger.warning("devtool: %s was replaced by a new file; following that one", self.path)
        if status is None:
            return found
        if self._file is None:
            try:
                self._file = self.path.open("rb")
            except FileNotFoundError:
                return found
            opened = os.fstat(self._file.fileno())
            self._identity = (opened.st_dev, opened.st_ino)
        elif status.st_size < self._offset:
            logger.warning("devtool: %s was truncated; reading it again from its start", self.path)
            self._file.seek(0)
            self._offset, self._partial, self._line, self._skipping_long_line = 0, b"", 0, False
            self.restarts += 1
        self._read_chunk(found)
        return found

    def close(self) -> None:
        self._close()

    def _read_chunk(self, found: Lines) -> bool:
        assert self._file is not None
        chunk = self._file.read(READ_CHUNK)
        if not chunk:
            return False
        self._offset += len(chunk)
        pieces = chunk.split(b"\n")
        pieces[0] = self._partial + pieces[0]
        self._partial = pieces.pop()
        for piece in pieces:
            self._line += 1
            if self._skipping_long_line:
                self._skipping_long_line = False
            else:
                self._parse(piece, found, torn=False)
        if self._skipping_long_line:
            self._partial = b""  # still inside a line too long to keep
        elif len(self._partial) > MAX_LINE:
            found.problems.append((self._line + 1, f"a line longer than {MAX_LINE} bytes"))
            self._partial = b""
            self._skipping_long_line = True
        return True

    def _parse(self, line: bytes, found: Lines, *, torn: bool) -> None:
        if self._line == 1 and line.startswith(b"\xef\xbb\xbf"):
            line = line[3:]
        line = line.strip()
        if not line:
            return
        result = read_line(line)
        if isinstance(result, Refused):
            reason = "the last line was left unfinished" if torn and not result.json else result.reason
            found.problems.append((self._line, reason))
            return
        found.events.append(result)

    def _close(self) -> None:
        if self._file is not None:
            self._file.close()
        self._file, self._identity = None, None
        self._offset, self._partial, self._line, self._skipping_long_line = 0, b"", 0, False


class Follower:
    """Tails one file into the store through the appender until cancelled."""

    def __init__(self, path: Path, store: Store, appender: Appender, *, interval: float = 0.1) -> None:
        self.path = path.resolve()
        self.stream = str(self.path)
        self.store = store
        self.appender = appender
        self.interval = interval
        self.stored = 0
        self.skipped_lines = 0
        self._reader = TailReader(self.path)
        self._resume: int | None = None
        self._unstored: list[CheckedEvent] = []
        self._failing = False

    async def run(self) -> None:
        try:
            while True:
                try:
                    busy = await self.step()
                except Exception as exc:  # a file or store problem: say so once, keep trying
                    if not self._failing:
                        logger.warning("devtool: following %s: %s; retrying", self.path, exc)
                    self._failing = True
                    busy = False
                if not busy:
                    await asyncio.sleep(self.interval)
        finally:
            self._reader.close()

    async def step(self) -> bool:
        """Read once and store what was read (and what failed to store before); whether there was any."""
        found = await run_in_threadpool(self._reader.read)
        for line, reason in found.problems:
            logger.warning("devtool: %s, line %d: %s; skipped", self.path, line, reason)
        self.skipped_lines += len(found.problems)
        events = found.events
        if self._reader.restarts:
            self._resume = 0  # what was stored before came from a file that is gone
        if events and self._resume is None:
            self._resume = await run_in_threadpool(stream_resume_point, self.store, self.stream, events[0].text)
        if events and self._resume:
            skip = min(self._resume, len(events))
            self._resume -= skip
            events = events[skip:]
        self._unstored.extend(events)
        if self._unstored:
            # Kept until stored: a store that fails now gets the same events on the next step.
            await self.appender.append(self._unstored, stream=self.stream)
            self.stored += len(self._unstored)
            self._unstored = []
            self._failing = False
        return bool(found.events or found.problems)
