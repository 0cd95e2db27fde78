"""A small Server-Sent Events client for tests and benchmarks: the browser's parsing rules, a real socket.

`parse(lines)` turns the lines of an event stream into `Message`s as an `EventSource` would (comments
and `retry:` are not messages; a message is dispatched at a blank line). `SseStream` holds one real
HTTP connection to a DevTool stream, sends `Last-Event-ID` like a reconnecting browser, and can be
dropped mid-stream (`close()`), which is what a network failure looks like to the server.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit


@dataclass(frozen=True)
class Message:
    event: str
    data: str
    id: str | None

    def json(self) -> Any:
        return json.loads(self.data)


def parse(lines: Iterable[str]) -> Iterator[Message]:
    """The messages of an event stream, given its lines without their line ends."""
    event, last_id = "", None
    data: list[str] = []
    for line in lines:
        if line == "":
            if data:
                yield Message(event or "message", "\n".join(data), last_id)
            event, data = "", []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "event":
            event = value
        elif field == "data":
            data.append(value)
        elif field == "id":
            last_id = value


class SseStream:
    """One open event stream over a real socket."""

    def __init__(self, url: str, *, last_event_id: str | None = None, timeout: float = 30) -> None:
        parts = urlsplit(url)
        self.connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=timeout)
        headers = {"Accept": "text/event-stream"}
        if last_event_id is not None:
            headers["Last-Event-ID"] = last_event_id
        self.connection.request("GET", parts.path + (f"?{parts.query}" if parts.query else ""), headers=headers)
        self.response = self.connection.getresponse()
        self.status = self.response.status
        self.content_type = self.response.getheader("Content-Type", "")

    def _lines(self) -> Iterator[str]:
        while line := self.response.readline():
            yield line.decode("utf-8").rstrip("\r\n")

    def messages(self) -> Iterator[Message]:
        """Messages as they arrive, until the server ends the stream."""
        return parse(self._lines())

    def close(self) -> None:
        """Drop the connection at once, as a network failure would."""
        sock = self.connection.sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        self.connection.close()
