"""What makes a process-journal entry loadable, said in Python, with the reason when it is not.

(A TraceEvent's rule is the event gate's, `event_gate.py`.) The fast load path checks the same rules
in SQL (`loaders/journals.py`); these functions name the problem once SQL has found that there is
one. Keep the two in step: `tests/test_store_rules.py` runs each case through both.

The rules are deliberately few. A journal entry needs string `process_id` and `entry_type`, an ISO
8601 `timestamp`, and, when present, an object `data` and a string (or null: derived) `entry_id`.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from devtool.core.jsonvalue import kind_of

# The ISO 8601 shapes both DuckDB and `datetime.fromisoformat` read the same way.
ISO_TIMESTAMP = r"\d{4}-\d{2}-\d{2}([T ]([01]\d|2[0-3]):[0-5]\d(:[0-5]\d(\.\d{1,9})?)?)?(Z|[+-]\d{2}:?\d{2})?"
_ISO = re.compile(ISO_TIMESTAMP)


def shown_value(value: Any) -> str:
    """`value` as a message quotes it: its repr, cut at 40 characters."""
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


def iso_timestamp_problem(value: Any) -> str | None:
    """Why `value` is not an ISO 8601 timestamp both readers agree on, or None."""
    if value is None:
        return 'no "timestamp"'
    if not isinstance(value, str):
        return f'"timestamp" is {kind_of(value)}, not an ISO 8601 string'
    if _ISO.fullmatch(value) is None:
        return f'"timestamp" {shown_value(value)} is not ISO 8601'
    try:
        datetime.fromisoformat(value)
    except ValueError as exc:
        return f'"timestamp" {shown_value(value)} is not a real time ({exc})'
    return None


def journal_entry_problem(entry: Any) -> str | None:
    """Why `entry` is not a loadable process-journal entry, or None when it is."""
    if not isinstance(entry, dict):
        return f"not a JSON object but {kind_of(entry)}"
    for key in ("process_id", "entry_type"):
        value = entry.get(key)
        if value is None or value == "":
            return f'no "{key}"'
        if not isinstance(value, str):
            return f'"{key}" is {kind_of(value)}, not a string'
    entry_id = entry.get("entry_id")
    if entry_id is not None and not isinstance(entry_id, str):
        return f'"entry_id" is {kind_of(entry_id)}, not a string'
    if "data" in entry and not isinstance(entry["data"], dict):
        return f'"data" is {kind_of(entry["data"])}, not an object'
    return iso_timestamp_problem(entry.get("timestamp"))
