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
        end = _last_break(data)
        if end < 0:
            self._pending = data
            return []
        self._pending = data[end + 2 :]
        # The complete events decoded at once and split (a stream of hundreds of events spends its
        # reading here): no event holds a blank line, and an invalid byte sequence ends at the newline
        # after it, so each event's text is what decoding its bytes alone would give.
        events: list[tuple[str | None, str]] = []
        for block in data[:end].decode("utf-8", "replace").split("\n\n"):
            # The providers' events are one `data:` line, or an `event:` line and one `data:` line.
            if block.startswith("data: ") and "\n" not in block:
                events.append((None, block[6:]))
            elif block.startswith("event: ") and _one_data(parts := block[7:].split("\n")):
                events.append((parts[0], parts[1][6:]))
            elif (event := _event(block)) is not None:
                events.append(event)
        return events


def _last_break(data: bytes) -> int:
    """Where the last blank line of `data` starts as `data.split(b"\n\n")` finds it (-1: none): in a run
    of an odd number of newlines, the split's last separator is one byte before the run's last two."""
    end = data.rfind(b"\n\n")
    if end < 0:
        return end
    start = end
    while start > 0 and data[start - 1] == 0x0A:
        start -= 1
    return end - 1 if (end + 2 - start) % 2 else end


def _one_data(parts: list[str]) -> bool:
    return len(parts) == 2 and parts[1].startswith("data: ")


def _event(block: str) -> tuple[str | None, str] | None:
    """Any other event, line by line."""
    name_of: str | None = None
    data: list[str] = []
    for line in block.split("\n"):
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "data":
            data.append(value)
        elif field == "event":
            name_of = value
    return (name_of, "\n".join(data)) if data else None
