"""A process's checkpoint file (`<process>.checkpoint.json`): replaced atomically, read with what is wrong."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from devtool.journal.disk import replace_atomically
from devtool.journal.errors import JournalError


def write_checkpoint(path: Path, state: bytes) -> None:
    """Replace the checkpoint with `state` (JSON bytes): a reader sees the old file or the new, never half."""
    try:
        replace_atomically(path, state)
    except OSError as exc:
        raise JournalError(f"could not write the checkpoint {path}: {exc.strerror}") from exc


def read_checkpoint(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """The checkpoint's state, or None and what is wrong with the file (missing, unreadable, not an object)."""
    try:
        state = orjson.loads(path.read_bytes())
    except FileNotFoundError:
        return None, "is missing"
    except (OSError, orjson.JSONDecodeError) as exc:
        return None, f"cannot be read ({exc})"
    if not isinstance(state, dict):
        return None, "does not hold a JSON object"
    return state, None
