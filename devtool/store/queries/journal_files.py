"""Which files a process journal's stored entries were loaded from, newest first.

A rewind applied from the DevTool is recorded in the process's own journal file when the store
knows it (so the process sees it on `recover`); this is where the store says which files it knows.
"""

from __future__ import annotations

from pathlib import Path

from devtool.store.database import Store


def journal_files(store: Store, process_id: str) -> list[Path]:
    """The journal files (`journal-jsonl` sources) that hold entries of `process_id`, newest load first."""
    rows = store.query(
        """
        SELECT s.path FROM sources s
        WHERE s.kind = 'journal-jsonl'
          AND s.source_id IN (SELECT DISTINCT source_id FROM journal_entries WHERE process_id = ?)
        ORDER BY s.source_id DESC
        """,
        [process_id],
    )
    return [Path(row[0]) for row in rows]


def entry_source(store: Store, process_id: str, entry_id: str) -> Path | None:
    """The file entry `entry_id` of `process_id` was loaded from (None for one that is not in a file)."""
    rows = store.query(
        """
        SELECT s.path FROM journal_entries j JOIN sources s USING (source_id)
        WHERE j.process_id = ? AND j.entry_id = ? AND s.kind = 'journal-jsonl'
        """,
        [process_id, entry_id],
    )
    return Path(rows[0][0]) if rows else None
