"""Tokens and cost of the model requests under a span: a turn's own, an agent's or a generation's in all.

Each real model request is a `model:call` span whose end event carries its usage and cost (kept as
columns: `prompt_tokens`, `completion_tokens`, `cost_micro_usd`), or a turn whose end carries its own
(an OpenTelemetry chat span: `run_summary.MODEL_REQUEST_END`). What a span used is the sum over
the model calls in its subtree, found by walking up from the calls to it. Only the spans that start
within the span's time and no higher than it can be on the way (a subtree starts within its root),
so the walk reads a small slice of a big run for a small span, and the whole run only for a span that
spans it (on a run of a million events and 116,000 model calls: ~25 ms for a worker agent, ~0.6 s
for the top agent; see BENCHMARKS.md). A model call without an end, or that failed, used nothing; a
call served from a snapshot has no model call, so it costs nothing here, as in the runtime's
budgets; a successful call without a price counts in `unpriced`, so a total is never shown as
complete, or as free, when it is not.
"""

from __future__ import annotations

from dataclasses import dataclass

from devtool.store.database import Store


@dataclass(frozen=True)
class Usage:
    """What the model requests under a span used: calls, tokens, and the priced calls' cost in micro-USD."""

    calls: int = 0  # successful model requests
    prompt_tokens: int = 0
    completion_tokens: int = 0
    micro_usd: float | None = None  # None when no call had a price: unknown, not zero
    unpriced: int = 0  # calls without a known price: the cost, if any, is a lower bound

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


_SPAN_USAGE = """
    WITH RECURSIVE target AS (
        SELECT depth, start_ts, coalesce(end_ts, 'infinity'::DOUBLE) AS end_ts
        FROM spans WHERE trace_id = $trace AND span_id = $span
    ),
    slice AS (
        SELECT s.span_id, s.parent_span_id, s.kind, s.end_event_id
        FROM spans s, target t
        WHERE s.trace_id = $trace AND s.start_ts BETWEEN t.start_ts AND t.end_ts AND s.depth >= t.depth
    ),
    calls AS (
        SELECT c.span_id, e.prompt_tokens, e.completion_tokens, e.cost_micro_usd
        FROM slice c JOIN events e ON e.event_id = c.end_event_id
        WHERE (c.kind = 'model:call' OR (c.kind = 'turn' AND e.prompt_tokens IS NOT NULL))
          AND e.success IS NOT FALSE AND e.error IS NULL
    ),
    up(call_span, span_id, hops) AS (
        SELECT span_id, span_id, 0 FROM calls
        UNION ALL
        SELECT up.call_span, s.parent_span_id, up.hops + 1
        FROM up JOIN slice s ON s.span_id = up.span_id
        WHERE up.span_id <> $span AND s.parent_span_id IS NOT NULL AND up.hops < 10000
    )
    SELECT count(*), coalesce(sum(calls.prompt_tokens), 0), coalesce(sum(calls.completion_tokens), 0),
           sum(calls.cost_micro_usd), count(*) FILTER (WHERE calls.cost_micro_usd IS NULL)
    FROM up JOIN calls ON calls.span_id = up.call_span
    WHERE up.span_id = $span
"""


def span_usage(store: Store, trace_id: str, span_id: str) -> Usage:
    """The usage of the model calls under `span_id` (itself included); none for an unknown span."""
    ((calls, prompt, completion, cost, unpriced),) = store.query(_SPAN_USAGE, {"trace": trace_id, "span": span_id})
    return Usage(int(calls), int(prompt), int(completion), None if cost is None else float(cost), int(unpriced))
