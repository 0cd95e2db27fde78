"""Live attachment: events of running agents stored as they come and streamed to browsers over SSE.

`Live` is what one app owns (`create_app` makes it, `state(request).live`): the `Broker` that wakes
open streams, the `Appender` every live batch goes through (`POST /api/v1/traces`, `--follow`), and
the followers of `Settings.follow` (`follow.py`), the OTLP log records held for spans to come
(`SpanLogs`) and the reader of OTLP requests (`otlp_reader.py`, with its worker processes). Its
`lifespan` starts the followers and the reader's workers, and on shutdown stops the followers,
stores what is still pending, ends the streams and stops the workers. The streams themselves are
`streams.py`; their endpoints are in `devtool.web.routes`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import anyio

from devtool.formats.otlp_logs import SpanLogs
from devtool.store import Store
from devtool.web.live.appender import Appender
from devtool.web.live.broker import Broker, LiveEvent, Subscription
from devtool.web.live.follow import Follower
from devtool.web.live.otlp_reader import OtlpReader
from devtool.web.otlp_workers import Workers
from devtool.web.settings import Settings

__all__ = ["Appender", "Broker", "Live", "LiveEvent", "Subscription"]


class Live:
    """The live machinery of one app: broker, appender, file followers."""

    def __init__(self, store: Store, settings: Settings, *, spawned: Workers | None = None) -> None:
        self.broker = Broker(queue_limit=settings.live_queue_events)
        self.appender = Appender(store, self.broker, derive_interval=settings.live_interval)
        self.span_logs = SpanLogs()  # OTLP log records waiting for their span (routes/otlp.py)
        self.otlp_reader = OtlpReader(
            settings.otlp_workers, self.span_logs, small=settings.otlp_small_body, spawned=spawned
        )
        self.followers = [
            Follower(path, store, self.appender, interval=settings.follow_interval) for path in settings.follow
        ]

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Any) -> AsyncIterator[None]:
        await self.otlp_reader.start()
        tasks = [asyncio.create_task(f.run(), name=f"devtool-follow {f.path}") for f in self.followers]
        try:
            yield
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self.appender.drain()
            self.broker.close()
            await anyio.to_thread.run_sync(self.otlp_reader.close)
