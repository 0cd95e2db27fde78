"""Backoff on wrong team tokens, per client: guessing a token costs time, a mistyped one barely any.

Each client (its address as the server sees it; behind a reverse proxy on this machine, uvicorn takes
it from `X-Forwarded-For`) may get the token wrong `free` times; each wrong one after that locks it
out for twice as long as the last, from `base` seconds up to `cap` seconds at most. While locked out,
the client's tries are not even checked (429 with `Retry-After`), the right token included, so a
guesser gets at most one guess per `cap` seconds; other clients are not held up. A right token ends
the client's count. At most `MAX_CLIENTS` clients are remembered, the oldest forgotten first.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

MAX_CLIENTS = 10_000


@dataclass(frozen=True)
class Strikes:
    wrong: int  # wrong tokens in a row
    until: float  # time.monotonic() when the client may try again


class Backoff:
    """The clients that got the token wrong lately, and until when each is locked out."""

    def __init__(self, free: int = 5, base: float = 1.0, cap: float = 60.0) -> None:
        self.free = free
        self.base = base
        self.cap = cap
        self._clients: OrderedDict[str, Strikes] = OrderedDict()
        self._lock = threading.Lock()

    def wait(self, client: str) -> int:
        """Whole seconds `client` must still wait before its next try (0: it may try now)."""
        with self._lock:
            strikes = self._clients.get(client)
        if strikes is None:
            return 0
        return max(0, math.ceil(strikes.until - time.monotonic()))

    def failed(self, client: str) -> int:
        """Count a wrong token from `client`; the seconds it is now locked out for (0: not locked out)."""
        now = time.monotonic()
        with self._lock:
            strikes = self._clients.pop(client, None)
            wrong = (strikes.wrong if strikes is not None else 0) + 1
            over = wrong - self.free
            delay = 0.0 if over <= 0 else min(self.cap, self.base * 2 ** min(over - 1, 32))
            self._clients[client] = Strikes(wrong, now + delay)
            while len(self._clients) > MAX_CLIENTS:
                self._clients.popitem(last=False)
        return math.ceil(delay)

    def succeeded(self, client: str) -> None:
        with self._lock:
            self._clients.pop(client, None)
