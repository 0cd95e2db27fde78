"""File names for process ids: safe on any filesystem, and never the same file for two ids.

A process id made of ASCII letters, digits, `-`, `_` and `.` is its own file stem, so the files are
exactly those of the published library (`<process_id>.jsonl`, `<process_id>.checkpoint.json`) and
journals move between the two unchanged. Any other character is written `%XX` (its UTF-8 bytes); `%`
itself is always escaped, so the mapping is one-to-one (that library maps `a/b` and `a_b` to the same
file, and so reads each process's entries as the other's). A leading `.` is escaped (no hidden files,
no `..`), and so are capital letters when the directory ignores case, as macOS usually does. A stem
longer than 200 bytes keeps a prefix and ends with `~` and a SHA-256 of the id (`~` is never a
character of an ordinary stem), which stays within every filesystem's name limit.
"""

from __future__ import annotations

import os
import string
import uuid
from hashlib import sha256
from pathlib import Path

from devtool.journal.errors import JournalError

_PLAIN = frozenset(string.ascii_letters + string.digits + "-_.")
MAX_STEM = 200


def file_stem(process_id: str, *, fold_case: bool = False) -> str:
    """The file-name stem of a process id; `fold_case` for directories that ignore case."""
    if not process_id:
        raise JournalError("a process id must not be empty: it names the process's journal file")
    parts: list[str] = []
    for position, char in enumerate(process_id):
        plain = char in _PLAIN and not (position == 0 and char == ".") and not (fold_case and char.isupper())
        if plain:
            parts.append(char)
        else:
            parts.extend(f"%{byte:02X}" for byte in char.encode("utf-8", "surrogatepass"))
    stem = "".join(parts)
    if len(stem) > MAX_STEM:
        digest = sha256(process_id.encode("utf-8", "surrogatepass")).hexdigest()[:40]
        stem = f"{stem[: MAX_STEM - len(digest) - 1]}~{digest}"
    return stem


def ignores_case(directory: Path) -> bool:
    """Whether names in this directory that differ only in case are the same file.

    Found by creating a probe file; a directory we cannot write to is taken as case-sensitive,
    which only matters for writing, and there we cannot write anyway.
    """
    probe = directory / f".devtool-case-probe-{uuid.uuid4().hex}"
    try:
        os.close(os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except OSError:
        return False
    try:
        return (directory / probe.name.upper()).exists()
    finally:
        probe.unlink(missing_ok=True)
