"""The gate every TraceEvent passes on its way into the store: what makes one valid, said once, and
checked once at each door.

The rule is deliberately small. A TraceEvent needs a `type`, a finite number `timestamp` (ms since the
epoch), `schemaVersion` 1 and a `trace` object with `traceId` and `spanId`; anything else may vary
(unknown types load and show as they are). `trace_event_problem` says it in Python, with the reason;
`VALID_SQL` says it in SQL for the bulk load; tests/test_store_rules.py runs every case through both.

The doors, each of which checks an event once:
- a file (`load_file`; the upload form and `devtool load` go through it): DuckDB's JSON reader checks
  every event with `VALID_SQL` (`event_sql.py`); a file it refuses has its bad lines named by
  `trace_event_problem` (`scan.py`);
- a batch posted as a JSON array (`POST /api/v1/traces`): `read_batch(body)`;
- a line of a followed file (`devtool serve --follow`): `read_line(line)`;
- TraceEvents made in Python (an OTLP translation, tests, scripts): `check_events(events)`, which
  `append_events` calls.

What passes is a `CheckedEvent`: the event and its JSON text as the store writes it (`live_append.
store_events` takes only those and checks nothing again).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from devtool.core.jsonvalue import kind_of, where_not_json
from devtool.store.errors import BatchTooLargeError, InvalidEventsError, LineProblem, NotABatchError
from devtool.store.rules import shown_value
from devtool.store.scan import MAX_KEPT

SCHEMA_VERSION = 1

# The rule in SQL, over `from_json(body, STRUCTURE) AS e` and `e.type AS t` (see `event_sql.py`):
# a JSON number's text casts to DOUBLE; a string's (quoted), a boolean's or an object's does not.
TIMESTAMP_SQL = "TRY_CAST(e.timestamp::VARCHAR AS DOUBLE)"
VALID_SQL = f"""
    t <> '' AND e.trace.traceId <> '' AND e.trace.spanId <> ''
    AND isfinite({TIMESTAMP_SQL}) AND TRY_CAST(e.schemaVersion::VARCHAR AS DOUBLE) = {SCHEMA_VERSION}
"""


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
        return f'"timestamp" is {kind_of(timestamp)} {shown_value(timestamp)}, not a number of milliseconds'
    if not math.isfinite(timestamp):
        return '"timestamp" is not a finite number'
    version = event.get("schemaVersion")
    if version is None:
        return f'no "schemaVersion" (TraceEvents carry "schemaVersion": {SCHEMA_VERSION})'
    if isinstance(version, bool) or not isinstance(version, int | float) or version != SCHEMA_VERSION:
        return f'unknown "schemaVersion" {shown_value(version)}: this devtool reads version {SCHEMA_VERSION}'
    trace = event.get("trace")
    if trace is None:
        return 'no "trace" (with "traceId" and "spanId")'
    if not isinstance(trace, dict):
        return f'"trace" is {kind_of(trace)}, not an object'
    for key in ("traceId", "spanId"):
        if trace.get(key) is None or trace[key] == "":
            return f'no "trace.{key}"'
    return None


@dataclass(frozen=True, slots=True)
class CheckedEvent:
    """A TraceEvent that passed the gate: the event, and its JSON text as the store writes it."""

    event: dict[str, Any]
    text: str


@dataclass(frozen=True, slots=True)
class Refused:
    """A value the gate turned away, and why; `json` is False when it was not even JSON."""

    reason: str
    json: bool = True


def check_event(value: Any) -> CheckedEvent | Refused:
    """`value` through the gate: a `CheckedEvent`, or why it is not a TraceEvent."""
    problem = trace_event_problem(value)
    if problem is not None:
        return Refused(problem)
    try:
        return CheckedEvent(value, orjson.dumps(value).decode())
    except TypeError as exc:  # made in Python: a value JSON has no word for
        return Refused(f"not JSON: {exc}", json=False)


def check_events(values: Sequence[Any]) -> list[CheckedEvent]:
    """All of `values` through the gate, in order; `InvalidEventsError` naming the bad ones by index
    when any is not a TraceEvent (then none of them is to be stored)."""
    checked: list[CheckedEvent] = []
    problems: list[LineProblem] = []
    bad = 0
    for index, value in enumerate(values):
        result = check_event(value)
        if isinstance(result, CheckedEvent):
            checked.append(result)
            continue
        bad += 1
        if len(problems) < MAX_KEPT:
            problems.append(LineProblem(result.reason, element=index))
    if bad:
        raise InvalidEventsError(tuple(problems), bad)
    return checked


def read_line(line: bytes) -> CheckedEvent | Refused:
    """One line of a JSONL trace (without its newline) through the gate. A good one keeps the line's
    own text, as a file load stores it: the same line followed and loaded is one event, stored once."""
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        _, column, found = where_not_json(line, exc)
        return Refused(f"not JSON at column {column}: {found}", json=False)
    problem = trace_event_problem(value)
    return Refused(problem) if problem is not None else CheckedEvent(value, line.decode())


@dataclass(frozen=True)
class Rejection:
    index: int  # in the batch as it was posted
    reason: str


@dataclass
class Batch:
    """A posted batch through the gate: the good events in store order with their posted indexes, and the bad."""

    size: int
    events: list[CheckedEvent] = field(default_factory=list)
    indexes: list[int] = field(default_factory=list)
    rejected: list[Rejection] = field(default_factory=list)


def read_batch(body: bytes, max_events: int) -> Batch:
    """A JSON array of TraceEvents through the gate, each event on its own: the good ones ordered by
    timestamp and then by the exporter's `_seq` counter where events carry one (equal timestamps are
    common at millisecond resolution). `NotABatchError` when the body is not a JSON array,
    `BatchTooLargeError` when it holds more than `max_events`."""
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise NotABatchError(f"the body is not JSON: {exc}") from None
    if not isinstance(document, list):
        raise NotABatchError(f"the body must be a JSON array of TraceEvents, not {kind_of(document)}")
    if len(document) > max_events:
        raise BatchTooLargeError(
            f"a batch of {len(document)} events is over the limit of {max_events}: send smaller batches"
        )
    batch = Batch(size=len(document))
    good: list[tuple[float, float, int, CheckedEvent]] = []
    for index, value in enumerate(document):
        result = check_event(value)
        if isinstance(result, Refused):
            batch.rejected.append(Rejection(index, result.reason))
            continue
        good.append((float(value["timestamp"]), _seq(value.get("_seq")), index, result))
    # Stable: events without `_seq` (and ties) keep the order they were posted in.
    good.sort(key=lambda key: key[:2])
    batch.indexes = [index for _, _, index, _ in good]
    batch.events = [checked for _, _, _, checked in good]
    return batch


def _seq(value: Any) -> float:
    """The exporter's counter as a sort key; missing or not a finite number sorts as 0 (posted order)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return 0.0
    return float(value)
