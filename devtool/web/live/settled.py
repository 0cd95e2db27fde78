"""Read your writes: a request that reads the store first waits for the spans of what is stored.

Live appends commit their events before their spans and run summaries are derived (`appender.py`).
A page, a fragment or an action that reads a run must not show it as it was one derive ago: a client
that posted events and then opens the run would not see them, and a rewind to the newest span would
not find it. So every request but the few that never read derived tables (the ingest endpoints, native
and OTLP, which are what must stay fast, the live streams, which say when the derive is done, and static files) first
settles the backlog: nothing to do when it is empty, else one derive (tens of milliseconds). The
wait is part of the answer's time, so it says how long it was: `Server-Timing: settle;dur=<ms>`.

The exception is the view of a run still running (`GET /runs/<id>` and the panes it refreshes): it
shows the run as derived so far, at once, and its live stream brings the rest. The page starts its
stream after the last event its spans cover (`derived_through`), so the stream sends the events the
page did not show and, if a derive covering them committed before the stream subscribed, a `spans`
message that redraws the panes (`?spans=`, `RunFeed`); a derive after that reaches it as any other.
Under a steady stream there is always a derive pending, and waiting for it made most of such a
page's time. A view of a run with nothing pending does not wait for other runs' derives either. A
finished run with events pending (its last events must all show: its page does not listen), a run
whose pending events end a root span (it may have just finished: the exporter that sent its root's
end then opens a page of the run whole) and a run not derived at all yet wait, for the derive of
that run alone (`Appender.settle(trace_id)`): under a big ingest, the derive of everything pending
took seconds, and one small run posted beside it waited for all of it. Actions (rewind, fork,
compare, export) and other pages wait for everything pending, and for the index step that makes
the runs' search words and call fingerprints after their derive (`Store.index_backlog`): the views
of a run read neither but a find in it (`/runs/<id>/search`), which waits for that step too.
"""

from __future__ import annotations

import time

from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Receive, Scope, Send

from devtool.store.queries.live import run_status
from devtool.web.live.appender import Appender
from devtool.web.paths import IdConvertor

# Where the wait is noted in the request's scope, for `Server-Timing` (`response_headers.py`).
SETTLE_MS = "devtool.settle_ms"
# The ingest endpoints (the native one and OTLP's: `/v1/logs` reads only whether spans' events are
# stored): an exporter's batch waiting for the derive of the batches before it would serialize ingest.
_UNSETTLED_PREFIXES = ("/static/", "/api/v1/traces", "/v1/traces", "/v1/logs")
_UNSETTLED_SUFFIXES = ("/live", "/live/runs")
# The views of a run a live page shows and refreshes, after `/runs/<id>`: they only read its spans.
_VIEWS = {(), ("select",), ("timeline",), ("header",), ("tree",), ("search",)}
_SPAN_VIEWS = {("tree", "children"), ("spans", "usage"), ("spans", "answer")}
_ID = IdConvertor()


class Settled:
    """ASGI middleware: derive what live appends left pending before the request is handled."""

    def __init__(self, app: ASGIApp, appender: Appender) -> None:
        self.app = app
        self.appender = appender

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        store = self.appender.store
        if scope["type"] == "http" and (store.backlog or store.unindexed):
            path: str = scope["path"]
            unsettled = path.startswith(_UNSETTLED_PREFIXES) or path.endswith(_UNSETTLED_SUFFIXES)
            waits, only = (False, None) if unsettled else await self._wait(scope)
            if waits:
                began = time.perf_counter()
                await self.appender.settle(only)
                scope[SETTLE_MS] = (time.perf_counter() - began) * 1000
        await self.app(scope, receive, send)

    async def _wait(self, scope: Scope) -> tuple[bool, str | None]:
        """Whether the request waits for a derive, and of which run alone (None: everything pending).
        A view of a run waits for none when nothing of the run is pending (other runs' derives change
        nothing it shows) or the run is running."""
        trace_id = live_view_of(scope["method"], scope["path"])
        store = self.appender.store
        if trace_id is None or (scope["path"].endswith("/search") and store.unindexed.holds(trace_id)):
            return True, None  # a find in a run reads its words: it waits for their index step too
        if not store.backlog.holds(trace_id):
            return False, None
        if store.backlog.ends_root(trace_id):
            return True, trace_id  # it may have just finished: a finished run's page shows all of it
        return await run_in_threadpool(run_status, store, trace_id) != "running", trace_id


def live_view_of(method: str, path: str) -> str | None:
    """The trace id of a run's view that may show the run as derived so far (a GET of the page or a
    pane it refreshes), else None."""
    parts = path.split("/")
    if method != "GET" or len(parts) < 3 or parts[:2] != ["", "runs"] or not parts[2]:
        return None
    rest = tuple(parts[3:])
    if rest in _VIEWS or (len(rest) == 3 and (rest[0], rest[2]) in _SPAN_VIEWS and rest[1]):
        return _ID.convert(parts[2])
    return None
