"""A running turn's answer as it streams: `turn:progress` events, throttled.

A streaming model calls `progress(piece)` with each piece of its answer's text. `TurnProgress`
keeps the text so far and hands it on at once for the first piece (so a live view shows that the
model has started answering), then at most every `PROGRESS_INTERVAL` seconds. Each event carries the
whole text so far, not a delta: a viewer that joins late, or coalesces a burst, still shows the
right text. The last pieces are not sent as progress: the turn's end carries the whole message.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final

PROGRESS_INTERVAL: Final = 0.2


class TurnProgress:
    """The `progress` callback of one model request: collects its text, emits it throttled."""

    __slots__ = ("_emit", "_interval", "_next", "_pieces", "first_at")

    def __init__(self, emit: Callable[[str], None], *, interval: float = PROGRESS_INTERVAL) -> None:
        self._emit = emit
        self._interval = interval
        self._pieces: list[str] = []
        self._next = 0.0
        # perf_counter() when the first piece arrived: the request's time to first token.
        self.first_at: float | None = None

    def __call__(self, piece: str) -> None:
        if not piece:
            return
        self._pieces.append(piece)
        now = time.perf_counter()
        if self.first_at is None:
            self.first_at = now
        if now >= self._next:
            self._next = now + self._interval
            text = "".join(self._pieces)
            self._pieces = [text]
            self._emit(text)

    def extend(self, pieces: list[str]) -> None:
        """Pieces read at once (a batch of a stream's bytes): what calling it with each in turn does,
        with the clock read once: the text so far sent with the first, if an event is due."""
        pieces = [piece for piece in pieces if piece]
        if not pieces:
            return
        now = time.perf_counter()
        if self.first_at is None:
            self.first_at = now
        if now < self._next:
            self._pieces += pieces
            return
        self._next = now + self._interval
        text = "".join(self._pieces) + pieces[0]
        self._pieces = [text, *pieces[1:]]
        self._emit(text)
