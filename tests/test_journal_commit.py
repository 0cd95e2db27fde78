"""Group commit: concurrent submissions share writes, each returns once its own batch is written."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence

import pytest

from devtool.journal.commit import GroupCommitter


class SlowDisk:
    """A write that takes as long as an fsync, recording each batch it was given."""

    def __init__(self, fail_on: int | None = None) -> None:
        self.batches: list[list[int]] = []
        self.fail_on = fail_on
        self.threads: set[str] = set()

    def write(self, batch: Sequence[int]) -> None:
        self.threads.add(threading.current_thread().name)
        time.sleep(0.01)
        if self.fail_on is not None and self.fail_on in batch:
            raise OSError(28, "No space left on device")
        self.batches.append(list(batch))


def test_concurrent_items_share_batches_and_each_waits_for_its_own() -> None:
    disk = SlowDisk()
    committer = GroupCommitter(disk.write)

    async def scenario() -> list[int]:
        done: list[int] = []

        async def submit(item: int) -> None:
            await committer.submit(item)
            assert any(item in batch for batch in disk.batches)  # written before submit returned
            done.append(item)

        await asyncio.gather(*(submit(item) for item in range(200)))
        await committer.wait_idle()
        return done

    assert sorted(asyncio.run(scenario())) == list(range(200))
    assert sorted(item for batch in disk.batches for item in batch) == list(range(200))
    assert len(disk.batches) <= 3  # the first alone, then everything that queued meanwhile
    assert disk.threads == {"devtool-journal-commit"}  # never on the event loop's thread


def test_a_failed_write_fails_exactly_the_submissions_of_its_batch() -> None:
    disk = SlowDisk(fail_on=0)
    committer = GroupCommitter(disk.write)

    async def scenario() -> None:
        with pytest.raises(OSError, match="No space left"):
            await committer.submit(0)
        await asyncio.gather(*(committer.submit(item) for item in range(1, 50)))

    asyncio.run(scenario())
    assert sorted(item for batch in disk.batches for item in batch) == list(range(1, 50))
