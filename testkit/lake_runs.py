"""TraceEvent runs made up for the lake's tests and bench: a `runWith` root holding `spans` custom spans,
each a start and an end, so a run of n spans is 2n + 2 events and ends (completed) with its root."""

from __future__ import annotations

import hashlib
from typing import Any


def trace_id_of(name: str) -> str:
    """A 32-hex trace id derived from `name` (the same name, the same id)."""
    return hashlib.sha256(name.encode()).hexdigest()[:32]


def run_events(name: str, spans: int, *, start_ms: float = 1_700_000_000_000.0) -> list[dict[str, Any]]:
    """The events of run `name`: its root and `spans` spans under it, in time order."""
    trace = trace_id_of(name)
    root = hashlib.sha256(f"{name}/root".encode()).hexdigest()[:16]

    def event(kind: str, at: float, span: str, parent: str, **fields: Any) -> dict[str, Any]:
        return {
            "schemaVersion": 1,
            "type": kind,
            "timestamp": at,
            "agentId": "lake-agent",
            "trace": {"traceId": trace, "spanId": span, "parentSpanId": parent},
            **fields,
        }

    events = [event("runWith:start", start_ms, root, "", entrypoint=name)]
    for n in range(spans):
        span = hashlib.sha256(f"{name}/{n}".encode()).hexdigest()[:16]
        at = start_ms + 1 + 2 * n
        events.append(event("custom:span:start", at, span, root, name=f"step {n}", input={"n": n}))
        events.append(event("custom:span:end", at + 1, span, root, name=f"step {n}", success=True, output={"n": n}))
    events.append(event("runWith:end", start_ms + 2 + 2 * spans, root, "", entrypoint=name, success=True))
    return events
