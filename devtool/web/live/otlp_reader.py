"""Where OTLP export bodies are read: inflated, decoded, mapped to TraceEvents and checked at the
store's gate (`web/otlp_read.py`, all that a worker imports). In a worker process of the server's own
when it has one, else in its threads.

Reading a request of 512 spans takes ~20 ms of CPU, all of it holding the GIL. Read in the server's
threads, that is time the thread appending to DuckDB waits for the GIL between its calls into
DuckDB, and under ingest at 10,000 spans a second the appends fell behind (BENCHMARKS.md, issue 16).
So `devtool serve` reads them in `Settings.otlp_workers` processes (`--otlp-workers`), which hand
back each event's JSON text and the few fields the store and the live streams read of it: the
events themselves would cost a third of the reading again to pickle.

A request whose spans may have log records held for them (`SpanLogs`, in the server) is read in the
server's threads, where the records are: they are rare (the older GenAI conventions' messages), and
sending every held record with every request would cost more than reading it here. So is a small
body (`SMALL_BODY` bytes as sent, a trace of a few spans: a millisecond of the GIL): in a worker it
queued behind the big bodies of an ingest (~20 ms each), and one small trace's export took 118 / 272 ms
(p50 / p95) to be answered during a 100,000-span ingest.

Bad input never costs more than itself: a span whose events the store's gate refuses is refused on
its own (`otlp_read.gated`: a partial success names it, the rest are stored), and what a worker raises always
pickles back, so no request ends a worker; a request of more spans than the server takes is counted
and refused before its spans are decoded (`otlp_read`, `formats/otlp_count.py`).

A worker that dies (killed, out of memory) costs the request it was reading a 503, which the
exporter retries, and is replaced by a new one; nothing of that request was stored. A server that
dies takes its workers with it. One that cannot start them does not start (`WorkerStartError` says
why, and what to do).
"""

from __future__ import annotations

import asyncio
from concurrent.futures.process import BrokenProcessPool

from starlette.concurrency import run_in_threadpool

from devtool.formats.otlp_logs import SpanLogs
from devtool.web.bodies import BodyError
from devtool.web.otlp_read import Body, ReadSpans, read_for_server, read_spans
from devtool.web.otlp_workers import Workers, WorkerStartError
from devtool.web.settings import SMALL_BODY


class OtlpReader:
    """Reads trace requests in `workers` processes (none: in the server's threads), but for bodies of
    up to `small` bytes as sent, read in the server's threads; `spawned`: those processes, started
    already (`otlp_workers.py`), else they start with `start`."""

    def __init__(
        self, workers: int, logs: SpanLogs, *, small: int = SMALL_BODY, spawned: Workers | None = None
    ) -> None:
        self.workers = workers
        self.logs = logs
        self.small = small
        self._workers = spawned

    async def start(self) -> None:
        """Start the workers and wait until each is ready, so that no export waits for one to start;
        `WorkerStartError` when one cannot start."""
        if self.workers:
            try:
                await self._running().ready()
            except WorkerStartError:
                self._workers = None  # shut down already
                raise

    def close(self) -> None:
        if self._workers is not None:
            self._workers.close()
            self._workers = None

    async def read_spans(self, body: Body) -> ReadSpans:
        """`body`'s spans as checked TraceEvents; `BodyError` for a body refused as a whole."""
        if not self.workers or len(self.logs) or len(body.data) <= self.small:
            return await run_in_threadpool(read_spans, body, self.logs)
        workers = self._running()
        try:
            sent = await asyncio.get_running_loop().run_in_executor(workers.pool, read_for_server, body)
        except BrokenProcessPool:
            if self._workers is workers:  # the next request starts new ones; this one's threads are let go
                self._workers = None
                workers.close(wait=False)
            message = "the process reading OTLP requests ended while reading this one: send it again"
            raise BodyError(503, message) from None
        return ReadSpans(sent.events(), sent.rejected, sent.total)

    def _running(self) -> Workers:
        if self._workers is None:
            self._workers = Workers(self.workers)
        return self._workers
