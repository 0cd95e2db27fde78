"""The gate every TraceEvent passes on its way into the store: what makes one valid, said once, and
checked once at each door.

The rule is deliberately small, and every limit in it protects a reader of the store. A TraceEvent
is a JSON object with `schemaVersion` 1, a string `type`, a `trace` object with string `traceId` and
`spanId` (and `parentSpanId`, when present, a string or null), ids and type at most `MAX_ID_CHARS`
characters, and a `timestamp` that is a number of milliseconds since the epoch from 2000 to 2100
(`TIME_MIN_MS`, `TIME_MAX_MS`): one in seconds, microseconds or nanoseconds is named as such, and
none can put a date out of any calendar's range. The event nests at most `MAX_DEPTH` objects and
arrays (itself the first) and its JSON, written compactly, is at most `MAX_EVENT_BYTES`. Anything else
may vary (unknown types load and show as they are). `trace_event_problem` says it in Python, with
the reason; `VALID_SQL` says it in SQL for the bulk load; tests/test_store_rules.py runs every case
through both, and tests/test_store_event_gate_doors.py sends the same bad events through every door.

The doors, each of which checks an event once:
- a file (`load_file`; the upload form and `devtool load` go through it): DuckDB's JSON reader checks
  every event with `VALID_SQL` (`event_sql.py`); a file it refuses has its bad lines named by
  `trace_event_problem` (`scan.py`);
- a batch posted as a JSON array (`POST /api/v1/traces`): `read_batch(body)`;
- a line of a followed file (`devtool serve --follow`): `read_line(line)`;
- TraceEvents made in Python (an OTLP translation, tests, scripts): `check_events(events)`, which
  `append_events` calls.

What passes is a `CheckedEvent`: the event and its JSON text as the store writes it (`live_append.
store_events` takes only those). Its insert checks the rule's fields again as DuckDB reads them
(`FIELDS_SQL`: two JSON parsers may read a key given twice differently), but not the text's limits
(`TEXT_SQL`), which the Python form measured on that very text.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import orjson

from devtool.core.jsonvalue import kind_of, where_not_json
from devtool.store.batch_elements import array_elements
from devtool.store.errors import BatchTooLargeError, InvalidEventsError, LineProblem, NotABatchError
from devtool.store.rules import shown_value
from devtool.store.scan import MAX_KEPT, MAX_LINE

SCHEMA_VERSION = 1
TIME_MIN_MS = 946_684_800_000  # 2000-01-01T00:00:00Z
TIME_MAX_MS = 4_102_444_800_000  # 2100-01-01T00:00:00Z, not included
# Other clocks' readings of the same years, as a message names them.
UNITS = (("seconds", 1e-3), ("microseconds", 1e3), ("nanoseconds", 1e6))
MAX_ID_CHARS = 256
MAX_DEPTH = 100
MAX_EVENT_BYTES = MAX_LINE  # one event is one line of a file
# orjson's own limit on nesting, and the words it refuses a text past it with.
_PARSER_DEPTH = 1_024
_TOO_DEEP = "depth limit exceeded"

# The rule in SQL, over `from_json(body, STRUCTURE) AS e`, `e.type ->> '$' AS t` and the event's text
# `body` (see `event_sql.py`). The fields checked are read as JSON, so a wrong kind of value is seen,
# not cast away: a JSON number's text casts to DOUBLE; a string's (quoted), a boolean's or an
# object's does not.
TIMESTAMP_SQL = "TRY_CAST(e.timestamp::VARCHAR AS DOUBLE)"


def _id_sql(value: str, *, optional: bool = False) -> str:
    """`value` is a string id; `optional`: or null, or absent, or empty (a root span's parent)."""
    # A JSON string's text, as `from_json` writes a JSON field, begins with its quote: telling it so
    # costs a quarter of what `json_type` does, which parses the value (four ids an event, at every load).
    text = f"starts_with({value}, '\"') AND length({value} ->> '$') <= {MAX_ID_CHARS}"
    if optional:
        return f"({value} IS NULL OR json_type({value}) = 'NULL' OR ({text}))"
    return f"({text} AND ({value} ->> '$') <> '')"


def _depth_sql() -> str:
    """`body` nests at most MAX_DEPTH objects and arrays. Counting its brackets settles almost every
    event at once (fewer brackets than the limit, so not that deep); the rest have their strings cut
    out and innermost pairs of brackets removed MAX_DEPTH times: nothing may be left."""
    brackets = """regexp_replace(body, '"(?:[^"\\\\]|\\\\.)*"|[^\\[\\]{}]', '', 'g')"""
    for _ in range(MAX_DEPTH):
        brackets = f"regexp_replace({brackets}, '\\{{\\}}|\\[\\]', '', 'g')"
    # Brackets counted by splitting on each: DuckDB 1.5's `replace` took 2 s a million events, this 0.25 s.
    count = "len(string_split(body, '{')) + len(string_split(body, '[')) - 2"
    return f"CASE WHEN {count} <= {MAX_DEPTH} THEN true ELSE {brackets} = '' END"


# Written compactly, as the Python form measures it: only a longer text needs rewriting to tell.
_SIZE_SQL = f"(strlen(body) <= {MAX_EVENT_BYTES} OR strlen(json(body)) <= {MAX_EVENT_BYTES})"

# The rule's fields, as DuckDB reads them from the text.
FIELDS_SQL = f"""
    {_id_sql("e.type")} AND {_id_sql("e.trace.traceId")} AND {_id_sql("e.trace.spanId")}
    AND {_id_sql("e.trace.parentSpanId", optional=True)}
    AND {TIMESTAMP_SQL} >= {TIME_MIN_MS} AND {TIMESTAMP_SQL} < {TIME_MAX_MS}
    AND TRY_CAST(e.schemaVersion::VARCHAR AS DOUBLE) = {SCHEMA_VERSION}
"""
# The limits on the text itself (its size and nesting), which do not depend on how a parser reads it:
# a `CheckedEvent`'s text was measured by the Python form already. Binding the nesting check (a hundred
# nested regexp_replace) costs a statement 10-20 ms, more than inserting a live batch of 1,000 events.
TEXT_SQL = f"({_SIZE_SQL} AND {_depth_sql()})"
VALID_SQL = f"{FIELDS_SQL} AND {TEXT_SQL}"


def trace_event_problem(event: Any) -> str | None:
    """Why `event` is not a loadable TraceEvent, or None when it is."""
    result = check_event(event)
    return result.reason if isinstance(result, Refused) else None


def field_problem(event: Any) -> str | None:
    if not isinstance(event, dict):
        return f"not a JSON object but {kind_of(event)}"
    problem = _id_problem(event, "type")
    if problem is not None:
        return problem
    problem = _timestamp_problem(event.get("timestamp"))
    if problem is not None:
        return problem
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
        problem = _id_problem(trace, key, "trace.")
        if problem is not None:
            return problem
    return _id_problem(trace, "parentSpanId", "trace.", optional=True)


def _id_problem(holder: dict[str, Any], key: str, prefix: str = "", *, optional: bool = False) -> str | None:
    """Why `holder[key]` is not a string id; `optional`: it may also be absent, null or empty."""
    value = holder.get(key)
    if value is None:
        return None if optional else f'no "{prefix}{key}"'
    if not isinstance(value, str):
        return f'"{prefix}{key}" is {kind_of(value)}, not a string'
    if value == "" and not optional:
        return f'"{prefix}{key}" is empty'
    if len(value) > MAX_ID_CHARS:
        return f'"{prefix}{key}" is {len(value):,} characters long, over the limit of {MAX_ID_CHARS}'
    return None


def _timestamp_problem(timestamp: Any) -> str | None:
    if timestamp is None:
        return 'no "timestamp"'
    if isinstance(timestamp, bool) or not isinstance(timestamp, int | float):
        return f'"timestamp" is {kind_of(timestamp)} {shown_value(timestamp)}, not a number of milliseconds'
    if not math.isfinite(timestamp):
        return '"timestamp" is not a finite number'
    if TIME_MIN_MS <= timestamp < TIME_MAX_MS:
        return None
    for unit, per_ms in UNITS:
        if TIME_MIN_MS * per_ms <= timestamp < TIME_MAX_MS * per_ms:
            return (
                f'"timestamp" {shown_value(timestamp)} looks like {unit} since the epoch: TraceEvents carry '
                f"milliseconds ({timestamp / per_ms:.0f})"
            )
    return f'"timestamp" {shown_value(timestamp)} is not a time from 2000 to 2100 in milliseconds since the epoch'


def _text_problem(event: Any, text: bytes) -> str | None:
    """The limits on an event's JSON `text` as a whole: its size, and how deep it nests."""
    if len(text) > MAX_EVENT_BYTES:
        return f"is {len(text) / (1 << 20):,.1f} MiB of JSON, over the limit of {MAX_EVENT_BYTES >> 20} MiB an event"
    if text.count(b"{") + text.count(b"[") > MAX_DEPTH:
        return _depth_problem(event)
    return None


def _depth_problem(value: Any) -> str | None:
    """How deep `value` nests when that is over MAX_DEPTH (walked without recursion: it may be deep)."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children)
    if deepest <= MAX_DEPTH:
        return None
    return f"nests {deepest} objects and arrays deep, over the limit of {MAX_DEPTH}"


class CheckedEvent(NamedTuple):
    """A TraceEvent that passed the gate: the event, and its JSON text as the store writes it.

    `written`: the gate wrote `text` itself from `event`, which `plainly_valid` passed, so the text's
    rule fields are of the very types the rule asks for and no key is in it twice (the store then
    reads them as those types rather than checking them again: `event_sql.insert_events_sql`).

    What reads `event` after the gate (the store's append, the live streams) reads only its rule
    fields, so one checked in another process (OTLP ingest's worker: `web/otlp_read.py`) comes
    back with those alone: `type`, `timestamp` and `trace`; `text` is the whole event.

    A named tuple, not a frozen dataclass: one is made for every event posted (two a span under OTLP
    ingest), and a frozen dataclass takes 2.5 times as long to make."""

    event: dict[str, Any]
    text: str
    written: bool = False


@dataclass(frozen=True, slots=True)
class Refused:
    """A value the gate turned away, and why; `json` is False when it was not even JSON."""

    reason: str
    json: bool = True


def plainly_valid(event: Any) -> bool:
    """The rule's fields for the usual event, quickly: True only when `field_problem` finds nothing
    (False may still be valid: the long form decides, and says why not)."""
    if type(event) is not dict:
        return False
    kind, version, trace = event.get("type"), event.get("schemaVersion"), event.get("trace")
    timestamp: Any = event.get("timestamp")
    if type(trace) is not dict or type(kind) is not str or not 0 < len(kind) <= MAX_ID_CHARS:
        return False
    if type(timestamp) not in (int, float) or not TIME_MIN_MS <= timestamp < TIME_MAX_MS:
        return False
    if type(version) not in (int, float) or version != SCHEMA_VERSION:
        return False
    trace_id, span_id, parent = trace.get("traceId"), trace.get("spanId"), trace.get("parentSpanId")
    return (
        type(trace_id) is str
        and 0 < len(trace_id) <= MAX_ID_CHARS
        and type(span_id) is str
        and 0 < len(span_id) <= MAX_ID_CHARS
        and (parent is None or (type(parent) is str and len(parent) <= MAX_ID_CHARS))
    )


def check_event(value: Any) -> CheckedEvent | Refused:
    """`value` through the gate: a `CheckedEvent`, or why it is not a TraceEvent."""
    plain = plainly_valid(value)
    problem = None if plain else field_problem(value)
    if problem is not None:
        return Refused(problem)
    try:
        text = orjson.dumps(value)
    except TypeError as exc:  # made in Python: a value JSON has no word for (or nested past orjson's limit)
        deep = _depth_problem(value)
        return Refused(deep) if deep else Refused(f"not JSON: {exc}", json=False)
    problem = _text_problem(value, text)
    if problem is not None:
        return Refused(problem)
    return CheckedEvent(value, text.decode(), plain)


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
        deep = _deep_elements(body, exc)
        if deep is None:
            raise NotABatchError(f"the body is not JSON: {exc}") from None
        document = deep
    if not isinstance(document, list):
        raise NotABatchError(f"the body must be a JSON array of TraceEvents, not {kind_of(document)}")
    if len(document) > max_events:
        raise BatchTooLargeError(
            f"a batch of {len(document)} events is over the limit of {max_events}: send smaller batches"
        )
    batch = Batch(size=len(document))
    good: list[tuple[float, float, int, CheckedEvent]] = []
    for index, value in enumerate(document):
        result = value if isinstance(value, Refused) else check_event(value)
        if isinstance(result, Refused):
            batch.rejected.append(Rejection(index, result.reason))
            continue
        good.append((float(value["timestamp"]), _seq(value.get("_seq")), index, result))
    # Stable: events without `_seq` (and ties) keep the order they were posted in.
    good.sort(key=lambda key: key[:2])
    batch.indexes = [index for _, _, index, _ in good]
    batch.events = [checked for _, _, _, checked in good]
    return batch


def _deep_elements(body: bytes, error: orjson.JSONDecodeError) -> list[Any] | None:
    """A batch the parser refused for one element's depth, read element by element: the elements, each
    too deep one `Refused` in its place; None when it is not JSON for another reason too."""
    if not str(error).startswith(_TOO_DEEP):
        return None
    texts = array_elements(body)
    if texts is None:
        return None
    elements: list[Any] = []
    for text in texts:
        try:
            elements.append(orjson.loads(text))
        except orjson.JSONDecodeError as exc:
            if not str(exc).startswith(_TOO_DEEP):
                return None
            deep = f"nests over {_PARSER_DEPTH:,} objects and arrays deep, over the limit of {MAX_DEPTH}"
            elements.append(Refused(deep))
    return elements


def _seq(value: Any) -> float:
    """The exporter's counter as a sort key; missing or not a finite number sorts as 0 (posted order)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return 0.0
    return float(value)
