"""`FileJournal`: one append-only JSONL file per process, durable, crash-safe and shareable.

The layout is the published library's (`<base>/<process_id>.jsonl` and
`<base>/<process_id>.checkpoint.json`), with process ids made safe for file names (see `names`), plus
a sidecar index `<process_id>.jsonl.idx` that the other library ignores and we rebuild whenever it
does not match (see `index`). What it guarantees beyond that library is in `process_file`: an append
is fsync'd before it returns, a torn last line is cut off on open (and reported), checkpoints are
replaced atomically, writers in several processes never interleave bytes, and a bad line in the
middle is skipped with a warning naming its line number.

The blocking file work runs in worker threads, so the event loop is never held up by an fsync.
"""

from __future__ import annotations

import asyncio
import os
import threading
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from devtool.journal.commit import GroupCommitter
from devtool.journal.entries import JournalEntry
from devtool.journal.file_log import FileLog
from devtool.journal.log import EntryLog, ListLog
from devtool.journal.names import file_stem, ignores_case
from devtool.journal.process_file import Encoded, ProcessFile, TailRepair
from devtool.journal.protocol import ReadFilter

_JSON_OPTIONS = orjson.OPT_NON_STR_KEYS


class FileJournal:
    """A `JournalProvider` on disk. `group_commit=True` batches concurrent appends into one fsync."""

    def __init__(self, base_path: str | os.PathLike[str] = ".devtool/journal", *, group_commit: bool = False) -> None:
        self.base_path = Path(base_path)
        self.base_path.mkdir(parents=True, exist_ok=True)
        self.group_commit = group_commit
        self._fold_case = ignores_case(self.base_path)
        self._files: dict[str, ProcessFile] = {}
        self._committers: dict[str, GroupCommitter[Encoded]] = {}
        self._mutex = threading.Lock()

    def path_for(self, process_id: str) -> Path:
        """The journal file of a process (it may not exist yet)."""
        return self._file(process_id).path

    @property
    def repairs(self) -> list[TailRepair]:
        """Every torn tail this journal has cut off since it was created."""
        with self._mutex:
            files = list(self._files.values())
        return [repair for file in files for repair in file.repairs]

    async def append(self, entry: JournalEntry) -> None:
        """Append an entry; it is on disk (fsync'd) when this returns."""
        file = self._file(entry.process_id)
        item = Encoded.of(entry)
        if self.group_commit:
            await self._committer(entry.process_id, file).submit(item)
        else:
            await asyncio.to_thread(file.append, [item])

    async def read(
        self,
        process_id: str,
        *,
        since: datetime | None = None,
        entry_type: str | None = None,
        limit: int | None = None,
    ) -> list[JournalEntry]:
        """A process's entries in order, filtered (see `ReadFilter`); bad lines are skipped with a warning."""
        selection = ReadFilter.of(since, entry_type, limit)
        file = self._file(process_id)

        def read() -> list[JournalEntry]:
            snapshot = file.snapshot()
            return [] if snapshot is None else FileLog(snapshot).read(selection)

        return await asyncio.to_thread(read)

    async def checkpoint(self, process_id: str, state: dict[str, Any]) -> None:
        """Replace the checkpoint file atomically and append a `checkpoint` entry holding the state."""
        stored = orjson.dumps(state, default=str, option=_JSON_OPTIONS | orjson.OPT_INDENT_2)
        entry = JournalEntry(process_id=process_id, entry_type="checkpoint", data={"state": orjson.loads(stored)})
        item = Encoded.of(entry)
        await asyncio.to_thread(self._file(process_id).checkpoint, stored, item)

    async def last_checkpoint(self, process_id: str) -> dict[str, Any] | None:
        """The checkpoint file's state; if it is unreadable, the last checkpoint entry's (with a warning)."""
        return (await self.log(process_id, with_checkpoint=True)).checkpoint

    async def log(self, process_id: str, *, with_checkpoint: bool = False) -> EntryLog:
        """A consistent view of a process's journal (and checkpoint) for the engines."""
        file = self._file(process_id)
        snapshot = await asyncio.to_thread(file.snapshot, with_checkpoint=with_checkpoint)
        return ListLog([], None) if snapshot is None else FileLog(snapshot)

    async def close(self) -> None:
        """Wait for queued appends, then close every file (they reopen on next use)."""
        with self._mutex:
            committers = list(self._committers.values())
            files = list(self._files.values())
        for committer in committers:
            await committer.wait_idle()
        for file in files:
            file.close()

    async def __aenter__(self) -> FileJournal:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def _file(self, process_id: str) -> ProcessFile:
        file = self._files.get(process_id)
        if file is not None:
            return file
        with self._mutex:
            file = self._files.get(process_id)
            if file is None:
                file = ProcessFile(self.base_path, process_id, file_stem(process_id, fold_case=self._fold_case))
                self._files[process_id] = file
            return file

    def _committer(self, process_id: str, file: ProcessFile) -> GroupCommitter[Encoded]:
        committer = self._committers.get(process_id)
        if committer is not None:
            return committer
        with self._mutex:
            committer = self._committers.get(process_id)
            if committer is None:
                committer = self._committers[process_id] = GroupCommitter(file.append)
            return committer

    def __repr__(self) -> str:
        return f"FileJournal({str(self.base_path)!r}, group_commit={self.group_commit})"
