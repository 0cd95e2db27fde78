"""The OTLP reader's worker processes (`live/otlp_reader.py`): spawned, waited for, shut down.

A worker's start is ~0.4 s, nearly all of it importing what it reads with (`otlp_read.py`). Spawned in
the app's lifespan, the server waited for that before it said where it was. `devtool serve` spawns
them first (`Workers`, handed to `create_app`), so that it runs beside the server's own start (its
store opened, its app imported) instead, and the lifespan only waits for what is left of it.
"""

from __future__ import annotations

import asyncio
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from devtool.web.otlp_read import ready, start_worker


class WorkerStartError(RuntimeError):
    """A worker process ended before it could read anything (its own error is printed above)."""

    def __init__(self) -> None:
        super().__init__(
            "the process that reads OTLP exports could not start; its error is above. A script that "
            'starts workers must serve under `if __name__ == "__main__":` (they are spawned, and import '
            "the main module again); no workers (`--otlp-workers 0`, `Settings(otlp_workers=0)`) read "
            "exports in the server's own threads"
        )


class Workers:
    """`count` worker processes, spawned as this is made; `ready` waits until each has started."""

    def __init__(self, count: int) -> None:
        # Spawned, not forked: the server's DuckDB and uvicorn threads must not be copied mid-flight.
        context = multiprocessing.get_context("spawn")
        self.count = count
        self.pool = ProcessPoolExecutor(count, mp_context=context, initializer=start_worker)
        # A task for each, while none is idle: the pool spawns a process for each.
        self._started = [self.pool.submit(ready) for _ in range(count)]

    async def ready(self) -> None:
        """Wait until each worker has started, so that no export waits for one; `WorkerStartError` (the
        workers shut down) when one cannot start."""
        try:
            await asyncio.gather(*(asyncio.wrap_future(started) for started in self._started))
        except BrokenProcessPool:
            self.close()
            raise WorkerStartError() from None

    def close(self, *, wait: bool = True) -> None:
        """Shut the workers down (again: nothing); `wait=False` leaves the pool's threads to end alone."""
        self.pool.shutdown(wait=wait, cancel_futures=True)
