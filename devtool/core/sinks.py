"""Where trace events go: a list in memory, or a JSONL file written one line per event.

A sink that has `many(events)` is handed events emitted together at once (`Emitter.emit_all`).

Any callable taking one event is a sink too. `HttpSink`, which streams to a running DevTool, lives
in `devtool.core.http_sink`.
"""

from __future__ import annotations

import contextlib
import functools
import os
from pathlib import Path

import orjson

from devtool.core.events import TraceEvent

# An event as its JSONL line.
_line = functools.partial(orjson.dumps, option=orjson.OPT_APPEND_NEWLINE)


class MemorySink:
    """Keeps every event in `.events`, in emit order."""

    def __init__(self) -> None:
        self.events: list[TraceEvent] = []

    def __call__(self, event: TraceEvent) -> None:
        self.events.append(event)

    def many(self, events: list[TraceEvent]) -> None:
        self.events.extend(events)

    def __repr__(self) -> str:
        return f"MemorySink({len(self.events)} events)"


class JsonlSink:
    """Appends one JSON line per event to `path`.

    Each event is written by an unbuffered `write(2)` on an O_APPEND file before the call that emitted
    it returns: a crash loses nothing that was emitted, lines from several writers never interleave,
    and a follower (`devtool serve --follow`) sees each event as soon as it happens. Events emitted
    together (`many`: a frame's opening or closing events, a settled request's) go in one write.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def __call__(self, event: TraceEvent) -> None:
        os.write(self._fd, orjson.dumps(event, option=orjson.OPT_APPEND_NEWLINE))

    def many(self, events: list[TraceEvent]) -> None:
        try:
            lines = b"".join(map(_line, events))  # in C: no Python step an event
        except orjson.JSONEncodeError:  # as one at a time: the others written, the first failure raised
            parts: list[bytes] = []
            for event in events:
                with contextlib.suppress(orjson.JSONEncodeError):
                    parts.append(_line(event))
            self._write(b"".join(parts))
            raise
        self._write(lines)

    def _write(self, lines: bytes) -> None:
        written = os.write(self._fd, lines)
        while written < len(lines):  # a regular file takes it whole but for a signal or a full disk
            lines = lines[written:]
            written = os.write(self._fd, lines)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> JsonlSink:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"JsonlSink({str(self.path)!r})"
