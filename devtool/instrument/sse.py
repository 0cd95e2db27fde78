"""Server-sent events as a streamed answer's bytes carry them, read as the bytes arrive.

A provider streams its answer as SSE (`event: NAME` and `data: TEXT` lines, a blank line after each
event); the instrumentation reads the same bytes the SDK reads, event by event, without holding the
SDK back: `SseDecoder.feed(chunk)` returns the events a chunk completes.
"""

from __future__ import annotations


class SseDecoder:
    """Events out of a byte stream fed in pieces of any size (a line or an event may span pieces)."""

    __slots__ = ("_pending",)

    def __init__(self) -> None:
        self._pending = b""

    def feed(self, chunk: bytes) -> list[tuple[str | None, str]]:
        """The `(event name or None, data)` of each event `chunk` completes."""
        data = self._pending + chunk if self._pending else chunk
        if b"\r" in data:
            data = data.replace(b"\r\n", b"\n")
        *blocks, self._pending = data.split(b"\n\n")
        return [event for block in blocks if (event := _event(block)) is not None]


def _event(block: bytes) -> tuple[str | None, str] | None:
    # The providers' events are one `data:` line, or an `event:` line and one `data:` line: read at
    # once (a stream of hundreds of events spends its reading here); anything else line by line.
    if block.startswith(b"data: ") and b"\n" not in block:
        return None, block[6:].decode("utf-8", "replace")
    if block.startswith(b"event: "):
        name, _, rest = block[7:].partition(b"\n")
        if rest.startswith(b"data: ") and b"\n" not in rest and b"\n" not in name:
            return name.decode("utf-8", "replace"), rest[6:].decode("utf-8", "replace")
    name_of: str | None = None
    data: list[str] = []
    for line in block.decode("utf-8", "replace").split("\n"):
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "data":
            data.append(value)
        elif field == "event":
            name_of = value
    return (name_of, "\n".join(data)) if data else None
