"""What changed between two JSON objects (memory, a process's context), key by key: the process page, a
span's memory and the compare page all read it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_MISSING = object()


@dataclass(frozen=True)
class Change:
    """One key: `added`, `removed`, `changed` or `same`, with its values before and after."""

    key: str
    change: str
    before: Any = None
    after: Any = None


def diff(before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> list[Change]:
    """Every key of either side, in the order `after` has them (then the removed ones), marked."""
    before, after = before or {}, after or {}
    changes = []
    for key, new in after.items():
        old = before.get(key, _MISSING)
        if old is _MISSING:
            changes.append(Change(key, "added", after=new))
        elif old != new or type(old) is not type(new):
            changes.append(Change(key, "changed", before=old, after=new))
        else:
            changes.append(Change(key, "same", before=old, after=new))
    changes.extend(Change(key, "removed", before=old) for key, old in before.items() if key not in after)
    return changes


def changed(changes: list[Change]) -> list[Change]:
    return [change for change in changes if change.change != "same"]
