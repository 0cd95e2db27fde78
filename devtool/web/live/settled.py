"""Read your writes: a request that reads the store first waits for the spans of what is stored.

Live appends commit their events before their spans and run summaries are derived (`appender.py`).
A page, a fragment or an action that reads a run must not show it as it was one derive ago: a client
that posted events and then opens the run would not see them, and a rewind to the newest span would
not find it. So every request but the few that never read derived tables (the ingest endpoint, which
is what must stay fast, the live streams, which say when the derive is done, and static files) first
settles the backlog: nothing to do when it is empty, else one derive (tens of milliseconds). The
wait is part of the answer's time, so it says how long it was: `Server-Timing: settle;dur=<ms>`.
"""

from __future__ import annotations

import time

from starlette.types import ASGIApp, Receive, Scope, Send

from devtool.web.live.appender import Appender

# Where the wait is noted in the request's scope, for `Server-Timing` (`response_headers.py`).
SETTLE_MS = "devtool.settle_ms"
_UNSETTLED_PREFIXES = ("/static/", "/api/v1/traces")
_UNSETTLED_SUFFIXES = ("/live", "/live/runs")


class Settled:
    """ASGI middleware: derive what live appends left pending before the request is handled."""

    def __init__(self, app: ASGIApp, appender: Appender) -> None:
        self.app = app
        self.appender = appender

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.appender.store.backlog:
            path: str = scope["path"]
            if not path.startswith(_UNSETTLED_PREFIXES) and not path.endswith(_UNSETTLED_SUFFIXES):
                began = time.perf_counter()
                await self.appender.settle()
                scope[SETTLE_MS] = (time.perf_counter() - began) * 1000
        await self.app(scope, receive, send)
