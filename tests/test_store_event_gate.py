"""The event gate's limits: each bad event named in words a user can act on, and refused by both forms
of the rule (Python and SQL) alike. tests/test_store_rules.py fuzzes the agreement; this file pins
what each limit says."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest

from devtool.store import Store
from devtool.store.errors import InvalidEventsError
from devtool.store.event_gate import MAX_DEPTH, MAX_ID_CHARS, check_events, read_batch, trace_event_problem
from tests.test_store_rules import GOOD_EVENT, sql_accepts_event


def event(**fields: Any) -> dict[str, Any]:
    return {**orjson.loads(orjson.dumps(GOOD_EVENT)), **fields}


def nested(depth: int) -> dict[str, Any]:
    """An event that nests `depth` objects deep, itself the first."""
    inner: dict[str, Any] = {}
    value = inner
    for _ in range(depth - 2):
        value["x"] = {}
        value = value["x"]
    return event(props=inner)


def with_trace(**fields: Any) -> dict[str, Any]:
    return event(trace={**GOOD_EVENT["trace"], **fields})


BAD = [
    (
        event(timestamp=1_790_000_000),
        '"timestamp" 1790000000 looks like seconds since the epoch: TraceEvents carry milliseconds (1790000000000)',
    ),
    (
        event(timestamp=1.79e15),
        '"timestamp" 1790000000000000.0 looks like microseconds since the epoch: TraceEvents '
        "carry milliseconds (1790000000000)",
    ),
    (
        event(timestamp=1_790_000_000_000_000_000),
        '"timestamp" 1790000000000000000 looks like nanoseconds since the '
        "epoch: TraceEvents carry milliseconds (1790000000000)",
    ),
    (event(timestamp=1e300), '"timestamp" 1e+300 is not a time from 2000 to 2100 in milliseconds since the epoch'),
    (event(timestamp=-1e300), '"timestamp" -1e+300 is not a time from 2000 to 2100 in milliseconds since the epoch'),
    (event(timestamp=0), '"timestamp" 0 is not a time from 2000 to 2100 in milliseconds since the epoch'),
    (event(type={"a": 1}), '"type" is an object, not a string'),
    (event(type=["agent:start"]), '"type" is an array, not a string'),
    (with_trace(traceId=["t"]), '"trace.traceId" is an array, not a string'),
    (with_trace(spanId={"y": 1}), '"trace.spanId" is an object, not a string'),
    (with_trace(parentSpanId=7), '"trace.parentSpanId" is a number, not a string'),
    (
        with_trace(traceId="t" * (MAX_ID_CHARS + 1)),
        f'"trace.traceId" is {MAX_ID_CHARS + 1} characters long, over the limit of {MAX_ID_CHARS}',
    ),
    (nested(MAX_DEPTH + 1), f"nests {MAX_DEPTH + 1} objects and arrays deep, over the limit of {MAX_DEPTH}"),
    (nested(600), f"nests 600 objects and arrays deep, over the limit of {MAX_DEPTH}"),
]


@pytest.mark.parametrize(("bad", "message"), BAD, ids=[message[:40] for _, message in BAD])
def test_each_limit_is_named_and_both_forms_refuse_it(store: Store, bad: dict[str, Any], message: str) -> None:
    assert trace_event_problem(bad) == message
    assert not sql_accepts_event(store, bad)


@pytest.mark.parametrize(
    "good",
    [
        event(timestamp=946_684_800_000),  # 2000-01-01, the first time taken
        event(timestamp=4_102_444_799_999.5),  # just before 2100
        nested(MAX_DEPTH),
        event(props={"text": "[[[[{{{{" * 200}),  # brackets in strings are text, not nesting
        with_trace(parentSpanId=None),
        with_trace(traceId="t" * MAX_ID_CHARS),
    ],
    ids=["2000", "2100", "deepest", "brackets-in-text", "null-parent", "longest-id"],
)
def test_what_is_just_inside_the_limits_passes_both_forms(store: Store, good: dict[str, Any]) -> None:
    assert trace_event_problem(good) is None
    assert sql_accepts_event(store, good)


def test_a_batch_keeps_its_good_events_and_names_the_bad_by_index() -> None:
    batch = read_batch(json.dumps([event(), nested(600), event(timestamp=1.79e18)]).encode(), 10)
    assert batch.indexes == [0]
    assert [(r.index, r.reason) for r in batch.rejected] == [
        (1, f"nests 600 objects and arrays deep, over the limit of {MAX_DEPTH}"),
        (
            2,
            '"timestamp" 1.79e+18 looks like nanoseconds since the epoch: TraceEvents carry milliseconds '
            "(1790000000000)",
        ),
    ]


def test_events_made_in_python_are_named_by_index() -> None:
    with pytest.raises(InvalidEventsError) as caught:
        check_events([event(), event(type=["x"])])
    assert caught.value.problems[0].element == 1
    assert caught.value.problems[0].message == '"type" is an array, not a string'
