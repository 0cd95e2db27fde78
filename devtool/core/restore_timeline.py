"""The events `restore_snapshot` reads, in time order, and the count of those it skipped.

Sorting is by timestamp and stable, so equal timestamps (the TypeScript library stamps whole
milliseconds) keep the order of the list. An event that is not an object or has no numeric
timestamp cannot be placed in time: it is skipped and counted in `Skipped`, as the walk later
counts the events it cannot read (no trace context, no schemaVersion, unknown type).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from itertools import islice
from operator import itemgetter, le
from typing import Any, Final

from devtool.core.errors import RestoreError

Event = dict[str, Any]

_NUMBERS: Final = frozenset({int, float})
_timestamp_of: Final = itemgetter("timestamp")


class Skipped:
    """Malformed events, counted by reason, with where the first of each was."""

    def __init__(self) -> None:
        self.reasons: dict[str, list[Any]] = {}
        self.count = 0

    def add(self, reason: str, where: str) -> None:
        """Count one event skipped for `reason` ("without a trace context"), found at `where`."""
        self.count += 1
        seen = self.reasons.get(reason)
        if seen is None:
            self.reasons[reason] = [1, where]
        else:
            seen[0] += 1

    def explain(self, lead: str) -> str:
        """`lead` and what was skipped, one clause per reason; "" when nothing was."""
        if not self.count:
            return ""
        parts = [f"{n} {reason} (first: {where})" for reason, (n, where) in self.reasons.items()]
        noun = "event" if self.count == 1 else "events"
        return f"{lead}{self.count} malformed {noun}: {'; '.join(parts)}."


def timeline(events: Iterable[Any], skipped: Skipped) -> list[Event]:
    """The events that are objects with a numeric timestamp, sorted by it, stably."""
    if isinstance(events, str | bytes | bytearray | os.PathLike | dict):
        raise RestoreError(
            f"Restore failed: events must be a list of trace events, not {type(events).__name__}"
            " (to restore a .jsonl file, parse each line first)."
        )
    try:
        listed = events if isinstance(events, list) else list(events)
    except TypeError:
        raise RestoreError(
            f"Restore failed: events must be a list of trace events, not {type(events).__name__}."
        ) from None
    # Reading a field of each event is a cache miss per event (a million events are spread over a
    # gigabyte), so the events are read once here and the sort works on the list of timestamps.
    try:
        stamps = list(map(_timestamp_of, listed))
    except (KeyError, TypeError, AttributeError):
        listed, stamps = _with_timestamps(listed, skipped)
    total = sum(stamps) if set(map(type, stamps)) <= _NUMBERS else None
    if total is None or total != total:  # a NaN anywhere (it does not sort) makes the sum NaN
        listed, stamps = _with_timestamps(listed, skipped)
    if all(map(le, stamps, islice(stamps, 1, None))):
        return listed  # emit order already: the usual case
    return [listed[index] for index in sorted(range(len(stamps)), key=stamps.__getitem__)]


def _with_timestamps(events: list[Any], skipped: Skipped) -> tuple[list[Event], list[float]]:
    usable: list[Event] = []
    stamps: list[float] = []
    for index, event in enumerate(events):
        if not isinstance(event, dict):
            skipped.add("that are not objects", f"item {index}")
            continue
        stamp: Any = event.get("timestamp")
        if type(stamp) not in _NUMBERS or stamp != stamp:
            skipped.add("without a numeric timestamp", f"item {index}")
            continue
        usable.append(event)
        stamps.append(stamp)
    return usable, stamps
