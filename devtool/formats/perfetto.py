"""Any run as Chrome trace-event JSON, the format Perfetto UI (and chrome://tracing) opens.

`perfetto_trace(events)` yields the text of one JSON object, `{"traceEvents": [...], ...}`, in chunks:
one complete slice (`"ph": "X"`, microseconds) per span, named as the DevTool names it, with its
kind as category and its fields as `args`; an instant span is an instant event (`"ph": "i"`); a span
still running lasts to the run's last event. Perfetto draws slices of one thread as a stack, so
spans are laid on lanes (threads) where each nests in the one below it: a span goes on its parent's
lane when its parent is that lane's innermost open span, else on the first free lane. Lanes are
named by the agent that opened them. Memory holds only open spans.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from devtool.formats.otlp_export import label
from devtool.formats.pairing import Event, Span, paired_spans

PID = 1
_ARGS_LIMIT = 64 << 10  # a slice's args past this are cut: the trace is for seeing time, not content


def perfetto_trace(events: Iterable[Event], *, name: str = "run") -> Iterator[bytes]:
    """The Chrome trace-event JSON of a run's events (in store order), in chunks."""
    lanes = _Lanes()
    yield b'{"displayTimeUnit":"ms","traceEvents":['
    yield _dump({"ph": "M", "pid": PID, "tid": 0, "name": "process_name", "args": {"name": name}})
    for span in paired_spans(events, on_start=lanes.open):
        lane = lanes.close(span)
        for named in lanes.new_names():
            yield b"," + _dump(named)
        yield b"," + _dump(_slice(span, lane))
    yield b"]}"


def _slice(span: Span, lane: int) -> dict[str, Any]:
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
        "ts": round(span.start_ms * 1000, 3),
        "args": args,
    }
    if span.instant:
        found |= {"ph": "i", "s": "t"}
    else:
        found |= {"ph": "X", "dur": round(max(span.end_ms - span.start_ms, 0.0) * 1000, 3)}
    return found


def _status(span: Span) -> str:
    if span.running:
        return "running"
    return "failed" if span.failed else "completed"


class _Lanes:
    """Threads on which slices nest: each lane a stack of the spans open on it."""

    def __init__(self) -> None:
        self.stacks: list[list[str]] = []
        self.lane_of: dict[str, int] = {}
        self.named: list[dict[str, Any]] = []

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
        self.stacks[lane].append(span_id)
        self.lane_of[span_id] = lane

    def close(self, span: Span) -> int:
        span_id = span.trace["spanId"]
        lane = self.lane_of.pop(span_id, 0)
        stack = self.stacks[lane] if lane < len(self.stacks) else []
        if span_id in stack:
            stack.remove(span_id)
        return lane + 1  # tid 0 is the process's own

    def new_names(self) -> list[dict[str, Any]]:
        named, self.named = self.named, []
        return named


def _dump(item: dict[str, Any]) -> bytes:
    return orjson.dumps(item, option=orjson.OPT_NON_STR_KEYS)
