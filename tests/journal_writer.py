"""A child process that appends to a `FileJournal` as fast as it can, for the crash and lock tests.

    python tests/journal_writer.py DIR PROCESS_ID TAG COUNT MODE

Entry `i` has id `<TAG>-<i>` and data that `expected_data(TAG, i)` rebuilds, so the parent can tell a
whole entry from garbage. After each append returns, the child prints the id on stdout (flushed): an
id printed is an append that was acknowledged. MODE is `durable` (one task, each append fsync'd on
its own), `group` (32 tasks appending at once with group commit) or `huge` (one task, entries of
48 MiB, so that one `write` takes long enough to be killed in the middle). COUNT 0: until killed.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import sys
from typing import Any

from devtool.journal import FileJournal, JournalEntry

HUGE = 48 << 20


def expected_data(tag: str, index: int, *, huge: bool = False) -> dict[str, Any]:
    """The data of entry `index`: from a few bytes to 192 KiB (48 MiB when `huge`)."""
    size = HUGE if huge else (index * 7919) % 7 * 32 * 1024 if index % 5 == 0 else index % 300
    digest = hashlib.sha256(f"{tag}-{index}".encode()).hexdigest()
    return {"i": index, "tag": tag, "digest": digest, "pad": digest[0] * size}


async def main(directory: str, process_id: str, tag: str, count: int, mode: str) -> None:
    journal = FileJournal(directory, group_commit=mode == "group")
    numbers = itertools.count() if count == 0 else iter(range(count))
    out = sys.stdout

    async def writer() -> None:
        for index in numbers:
            entry_type = ("context_update", "tool_call", "assistant_message")[index % 3]
            await journal.append(
                JournalEntry(
                    entry_id=f"{tag}-{index}",
                    process_id=process_id,
                    entry_type=entry_type,
                    data=expected_data(tag, index, huge=mode == "huge"),
                )
            )
            out.write(f"{tag}-{index}\n")
            out.flush()

    print("ready", flush=True)
    await asyncio.gather(*(writer() for _ in range(32 if mode == "group" else 1)))
    await journal.close()


if __name__ == "__main__":
    directory, process_id, tag, count, mode = sys.argv[1:6]
    asyncio.run(main(directory, process_id, tag, int(count), mode))
