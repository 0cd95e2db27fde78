"""Any run as Chrome trace-event JSON, the format Perfetto UI (and chrome://tracing) opens.

`perfetto_trace(events)` yields the text of one JSON object, `{"traceEvents": [...], ...}`, in chunks:
one complete slice (`"ph": "X"`, microseconds) per span, named as the DevTool names it, with its
kind as category and its fields as `args`; an instant span is an instant event (`"ph": "i"`); a span
still running lasts to the run's last event. Perfetto draws slices of one thread as a stack, so
spans are laid on lanes (threads) where each nests in the one below it: a span goes on its parent's
lane when its parent is that lane's innermost open span, else on the first free lane. Lanes are
named by the agent that opened them. Memory holds only open spans.

Slices nest exactly, as Perfetto requires of one thread's slices: a slice starts no earlier than the
one it sits on, and a slice ends no earlier than the last of the slices on it, closed before it (a
model call whose end was stamped after its turn's stretches that turn), and no later than the slice it
sits on when that one closed first (a slice is written when it closes). Times are microseconds since
the run's first event (its epoch time is `otherData.startTime`): epoch microseconds (~1.7e15) are past
what a double holds to the microsecond, and rounding there made a child end 0.25 µs after its parent.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import Any

import orjson

from devtool.formats.otlp_export import label
from devtool.formats.pairing import Event, Span, paired_spans

PID = 1
_ARGS_LIMIT = 64 << 10  # a slice's args past this are cut: the trace is for seeing time, not content


def perfetto_trace(events: Iterable[Event], *, name: str = "run") -> Iterator[bytes]:
    """The Chrome trace-event JSON of a run's events (in store order), in chunks."""
    ordered = iter(events)
    first = next(ordered, None)
    base_ms = float(first.get("timestamp") or 0) if first is not None else 0.0
    lanes = _Lanes(base_ms)
    start = datetime.fromtimestamp(base_ms / 1000, UTC).isoformat(timespec="microseconds")
    yield b'{"displayTimeUnit":"ms","otherData":' + _dump({"startTime": start}) + b',"traceEvents":['
    yield _dump({"ph": "M", "pid": PID, "tid": 0, "name": "process_name", "args": {"name": name}})
    chained = itertools.chain([first] if first is not None else [], ordered)
    for span in paired_spans(chained, on_start=lanes.open):
        lane, begin, end = lanes.close(span)
        for named in lanes.new_names():
            yield b"," + _dump(named)
        yield b"," + _dump(_slice(span, lane, begin, end))
    yield b"]}"


def _slice(span: Span, lane: int, begin: float, end: float) -> dict[str, Any]:
    """`span`'s event on `lane`, from `begin` to `end` (µs since the run's first event)."""
    fields = span.fields
    kind = span.kind
    args: dict[str, Any] = {"spanId": span.trace["spanId"], "status": _status(span)}
    for key in ("agentId", "callId", "contentHash", "cache", "error", "usage", "model", "toolNames"):
        if fields.get(key) not in (None, ""):
            args[key] = fields[key]
    text = orjson.dumps(args)
    if len(text) > _ARGS_LIMIT:
        args = {"spanId": args["spanId"], "status": args["status"], "truncated": True}
    name = str(span.points[0].get("message") or kind)[:200] if span.instant else label(kind, fields)
    found: dict[str, Any] = {
        "name": name,
        "cat": kind,
        "pid": PID,
        "tid": lane,
        "ts": begin,
        "args": args,
    }
    if span.instant:
        found |= {"ph": "i", "s": "t"}
    else:
        found |= {"ph": "X", "dur": round(end - begin, 3)}
    return found


def _status(span: Span) -> str:
    if span.running:
        return "running"
    return "failed" if span.failed else "completed"


class _Lanes:
    """Threads on which slices nest: each lane a stack of the spans open on it, with the times that
    keep each slice inside the one it sits on (µs since `base_ms`)."""

    def __init__(self, base_ms: float) -> None:
        self.base_ms = base_ms
        self.stacks: list[list[str]] = []
        self.lane_of: dict[str, int] = {}
        self.named: list[dict[str, Any]] = []
        self.begin: dict[str, float] = {}  # an open span's start, no earlier than its lane parent's
        self.on: dict[str, str] = {}  # an open span -> the open span under it on its lane
        self.reach: dict[str, float] = {}  # an open span -> the latest end of the slices closed on it
        self.cap: dict[str, float] = {}  # an open span -> the end of a slice under it that closed first

    def _micros(self, ms: float) -> float:
        return max(round((ms - self.base_ms) * 1000, 3), 0.0)

    def open(self, span: Span) -> None:
        span_id, parent = span.trace["spanId"], span.trace["parentSpanId"]
        lane = self.lane_of.get(parent)
        if lane is None or not self.stacks[lane] or self.stacks[lane][-1] != parent:
            lane = next((i for i, stack in enumerate(self.stacks) if not stack), None)
            if lane is None:
                lane = len(self.stacks)
                self.stacks.append([])
            agent = span.fields.get("agentId") or label(span.kind, span.fields)
            self.named.append({"ph": "M", "pid": PID, "tid": lane + 1, "name": "thread_name", "args": {"name": agent}})
        else:
            self.on[span_id] = parent
        begin = self._micros(span.start_ms)
        self.begin[span_id] = max(begin, self.begin.get(self.on.get(span_id, ""), begin))
        self.stacks[lane].append(span_id)
        self.lane_of[span_id] = lane

    def close(self, span: Span) -> tuple[int, float, float]:
        """`span`'s thread id, and its start and end, nested in the slice under it."""
        span_id = span.trace["spanId"]
        lane = self.lane_of.pop(span_id, 0)
        stack = self.stacks[lane] if lane < len(self.stacks) else []
        begin = self.begin.pop(span_id, None)
        if begin is None:  # an instant: no start event went through open()
            begin = self._micros(span.start_ms)
        end = max(self._micros(span.end_ms), self.reach.pop(span_id, begin), begin)
        if (cap := self.cap.pop(span_id, None)) is not None:  # the slice under it is written already
            begin, end = min(begin, cap), min(end, cap)
        if span_id in stack:
            above = stack[stack.index(span_id) + 1 :]
            stack.remove(span_id)
            for child in above:  # still open, though this one closed: kept inside it
                self.cap[child] = min(self.cap.get(child, end), end)
        parent = self.on.pop(span_id, None)
        if parent is not None:
            self.reach[parent] = max(self.reach.get(parent, end), end)
        return lane + 1, begin, end  # tid 0 is the process's own

    def new_names(self) -> list[dict[str, Any]]:
        named, self.named = self.named, []
        return named


def _dump(item: dict[str, Any]) -> bytes:
    return orjson.dumps(item, option=orjson.OPT_NON_STR_KEYS)
