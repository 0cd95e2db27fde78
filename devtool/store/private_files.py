"""Store files readable by their owner only: the process's umask, and the user's own kept for children.

A store holds agents' prompts and data, and DuckDB creates its files (the database, the rewind file,
their WALs, whenever a checkpoint has removed one) with the process's umask: `private_files` makes
that 077 for a process that opens a store for the command line (`devtool serve`, `load`, `export`,
`demo`). What the user's agents write is theirs: a replay's child process runs with the umask the
user had (`user_umask`).
"""

from __future__ import annotations

import os

_user_umask: int | None = None


def private_files() -> None:
    """From now on, files and folders this process creates are for its owner only."""
    global _user_umask
    previous = os.umask(0o077)
    if _user_umask is None:
        _user_umask = previous
    os.umask(previous | 0o077)


def user_umask() -> int | None:
    """The umask the user started this process with, if `private_files` changed it (else None: as is)."""
    return _user_umask
