"""The core library's errors: one base class, a subclass per thing that can go wrong."""

from __future__ import annotations


class CoreError(Exception):
    """Base class of every error `devtool.core` raises on purpose."""


class OutsideRunError(CoreError):
    """A function that needs a running agent context was called outside of one."""


class SnapshotDisabledError(CoreError):
    """Snapshots are off for this run (production default), so nothing can be dumped or replayed."""


class SnapshotError(CoreError):
    """A snapshot handed to `run_with` is malformed; the message names the bad field."""


class RestoreError(CoreError):
    """`restore_snapshot` cannot build a snapshot from these events at this cut."""


class ModelError(CoreError):
    """A model could not answer (no model configured, a script ran out, a bad reply)."""


class PromptError(CoreError):
    """A prompt did not reach a valid answer (schema never satisfied, too many turns)."""


class ToolError(CoreError):
    """A tool call was refused before its handler ran (unknown tool, input not matching its schema)."""


def is_snapshot_disabled_error(error: object) -> bool:
    """True for the error `dump_snapshot` and `run_with(snapshot=...)` raise when snapshots are off."""
    return isinstance(error, SnapshotDisabledError)
