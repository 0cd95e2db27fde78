"""What makes a TraceEvent or a journal entry loadable, said in Python, with the reason when it is not.

The fast load path checks the same rules in SQL (`event_sql.py`, `loaders/journals.py`); these
functions name the problem once SQL has found that there is one, and check events that arrive in
Python (`append_events`). Keep the two in step: `tests/test_store_rules.py` runs each case through both.

The rules are deliberately few. A TraceEvent needs a `type`, a finite number `timestamp` (ms since
the epoch), `schemaVersion` 1 and a `trace` object with `traceId` and `spanId`; anything else may vary
(unknown types load and show as they are). A journal entry needs string `process_id` and
`entry_type`, an ISO 8601 `timestamp`, and, when present, an object `data` and a string (or null:
derived) `entry_id`.
"""

from __future__ import annotations

import math
import re
from datetime import datetime
from typing import Any

from devtool.core.jsonvalue import kind_of

SCHEMA_VERSION = 1

# The ISO 8601 shapes both DuckDB and `datetime.fromisoformat` read the same way.
ISO_TIMESTAMP = r"\d{4}-\d{2}-\d{2}([T ]([01]\d|2[0-3]):[0-5]\d(:[0-5]\d(\.\d{1,9})?)?)?(Z|[+-]\d{2}:?\d{2})?"
_ISO = re.compile(ISO_TIMESTAMP)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


def trace_event_problem(event: Any) -> str | None:
    """Why `event` is not a loadable TraceEvent, or None when it is."""
    if not isinstance(event, dict):
        return f"not a JSON object but {kind_of(event)}"
    if event.get("type") is None:
        return 'no "type"'
    if event["type"] == "":
        return '"type" is empty'
    timestamp = event.get("timestamp")
    if timestamp is None:
        return 'no "timestamp"'
    if isinstance(timestamp, bool) or not isinstance(timestamp, int | float):
        return f'"timestamp" is {kind_of(timestamp)} {_shown(timestamp)}, not a number of milliseconds'
    if not math.isfinite(timestamp):
        return '"timestamp" is not a finite number'
    version = event.get("schemaVersion")
    if version is None:
        return f'no "schemaVersion" (TraceEvents carry "schemaVersion": {SCHEMA_VERSION})'
    if isinstance(version, bool) or not isinstance(version, int | float) or version != SCHEMA_VERSION:
        return f'unknown "schemaVersion" {_shown(version)}: this devtool reads version {SCHEMA_VERSION}'
    trace = event.get("trace")
    if trace is None:
        return 'no "trace" (with "traceId" and "spanId")'
    if not isinstance(trace, dict):
        return f'"trace" is {kind_of(trace)}, not an object'
    for key in ("traceId", "spanId"):
        if trace.get(key) is None or trace[key] == "":
            return f'no "trace.{key}"'
    return None


def iso_timestamp_problem(value: Any) -> str | None:
    """Why `value` is not an ISO 8601 timestamp both readers agree on, or None."""
    if value is None:
        return 'no "timestamp"'
    if not isinstance(value, str):
        return f'"timestamp" is {kind_of(value)}, not an ISO 8601 string'
    if _ISO.fullmatch(value) is None:
        return f'"timestamp" {_shown(value)} is not ISO 8601'
    try:
        datetime.fromisoformat(value)
    except ValueError as exc:
        return f'"timestamp" {_shown(value)} is not a real time ({exc})'
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
