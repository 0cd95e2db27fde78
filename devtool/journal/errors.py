"""The journal's errors and warnings: one base class each, a subclass per thing that can go wrong.

Errors stop an operation (an append that could not be made durable, a rewind to an entry that is not
there). Warnings report what the journal repaired or skipped on its own and carried on: a torn last
line cut off, a bad line skipped (its message names the file and the line number), a checkpoint file
that could not be read. Nothing stored is ever lost silently.
"""

from __future__ import annotations


class JournalError(Exception):
    """Base class of every error `devtool.journal` raises on purpose."""


class UnknownEntryError(JournalError, ValueError):
    """A rewind names an entry id that the process's journal does not hold.

    It is a `ValueError` too, as in the published library, so code written against it keeps working.
    """


class MalformedEntryError(JournalError, ValueError):
    """A journal line or dict is not an entry; the message says which field is wrong."""


class JournalWarning(UserWarning):
    """Base class of the warnings the journal gives when it repairs or skips something."""


class TornTailWarning(JournalWarning):
    """A crash left an unfinished last line; it was cut off so the next append starts clean."""


class BadLineWarning(JournalWarning):
    """A line in the middle of a journal file is not an entry of this process; it was skipped."""


class CheckpointWarning(JournalWarning):
    """A checkpoint file could not be read; the last checkpoint entry of the journal was used."""
