"""Why a run failed: the chain of spans its failure came up through, the span that ended it, and the
failures that were caught on the way.

A failure *propagated* from a span to its parent when the parent failed with the same error: the
same message, or one that holds it (a re-raise that wraps it); a failure without a message, or under
a parent failed without one, is taken as passed up (nothing tells them apart). From the run's failed root, the chain
follows at each step the failed child whose error the span failed with (the last to end, when
several did), down to the innermost: the cause. A prompt loop that gave up because its model's
answers failed the schema ends in the turn whose answer failed last; such a turn is a *failed
attempt*: its own span says `completed` (its model answered), the `validation:failure` after it says
why the answer was refused. A failed span whose parent did not fail with its error was *handled*:
something above it caught it, and the run went on.

Everything here is read from the run's failed spans, then one read of the turns of the prompt loops
that refused answers; the walk over them is in memory. A big run's failed spans are one range of
its span keys (`span_failures`, with their names and callIds: made by the load or the server's
indexer); another run's are a read of `spans` filtered on the run and on `status`, which touches most
of its row groups, as failed spans are scattered over the run (0.1-0.2 s a million events). The answer
is kept for the run as it is (`KEPT_RUNS`).
"""

from __future__ import annotations

import functools
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import orjson

from devtool.store import span_keys
from devtool.store.database import Store
from devtool.store.errors import NotFoundError
from devtool.store.span_sql import HIDDEN_KINDS


class NoFailure(ValueError):
    """The run did not fail: it has no cause to show."""


@dataclass(frozen=True, slots=True)
class FailedSpan:
    """What the walk needs of a failed span (its name and callId are read for the chain's steps only:
    strings of rows scattered over the run cost most of the read)."""

    span_id: str
    parent_span_id: str | None
    kind: str
    instant: bool
    start_ms: float
    end_ms: float | None
    error: str | None
    end_event_id: int | None
    depth: int

    @property
    def shown(self) -> bool:
        return not self.instant and self.kind not in HIDDEN_KINDS


@dataclass(frozen=True, slots=True)
class ChainStep:
    """A span of a cause's chain, as its breadcrumb names it."""

    span_id: str
    kind: str
    name: str
    call_id: str | None


@dataclass(frozen=True, slots=True)
class Cause:
    """The span whose failure ended the run, the shown spans from the root down to it, and the error."""

    span_id: str
    call_id: str | None
    chain: tuple[ChainStep, ...]
    error_name: str
    error_message: str
    attempt_error: str | None  # a failed attempt's: why its answer was refused

    def to_json(self) -> dict[str, Any]:
        return {
            "spanId": self.span_id,
            "callId": self.call_id,
            "chain": [step.span_id for step in self.chain],
            "error": {"name": self.error_name, "message": self.error_message},
        }


@dataclass(frozen=True, slots=True)
class Attempt:
    """A turn whose answer was refused: when it started, why, and its prompt loop."""

    start_ms: float
    why: str
    loop: str


@dataclass(frozen=True)
class Faults:
    """A run's failures as the page marks them: the cause (None: the run did not fail), the spans whose
    failure was handled, the turns whose answer was refused (with why), and where each failure began
    (a shown span that failed of itself, not by a child's failure, or a refused turn), in time order:
    what `n` and `p` step through."""

    cause: Cause | None
    handled: frozenset[str] = frozenset()
    attempts: dict[str, str] = field(default_factory=dict)
    errors: tuple[str, ...] = ()


# The faults of the runs asked for last: reading a run's failed spans is a read of most of `spans`'
# row groups (0.1-0.2 s a million events), and a page asks for each pane. Keyed by the run's last event
# and status, so a run that grew or ended is read again.
KEPT_RUNS = 16

_FAILED = """
    SELECT span_id, parent_span_id, kind, instant, start_ts, end_ts, error, end_event_id, depth
    FROM spans WHERE trace_id = ? AND status = 'failed'
    ORDER BY start_ts, start_event_id
"""


def run_faults(store: Store, trace_id: str) -> Faults:
    """The failures of run `trace_id` (`NotFoundError` when there is no such run); kept for the run as
    it is (its last event and status), as every pane of its page asks."""
    with store.reader() as cursor:
        found = cursor.execute("SELECT status, last_event_id FROM runs WHERE trace_id = ?", [trace_id]).fetchall()
    if not found:
        raise NotFoundError(f"no run {trace_id!r} in this DevTool")
    return _faults(store, trace_id, found[0][0], found[0][1])


@functools.lru_cache(maxsize=KEPT_RUNS)
def _faults(store: Store, trace_id: str, status: str, last_event_id: int) -> Faults:
    """The run's failures read anew; `status` and `last_event_id` key the cache (`KEPT_RUNS`)."""
    with store.reader() as cursor:
        keyed = span_keys.failed_spans(cursor, trace_id)
        if keyed is None:
            failed = [FailedSpan(*row) for row in cursor.execute(_FAILED, [trace_id]).fetchall()]
            names: dict[str, tuple[str, str | None]] = {}
        else:
            failed = [FailedSpan(*row[:9]) for row in keyed]
            names = {row[0]: (row[9], row[10]) for row in keyed}
        by_id = {span.span_id: span for span in failed}
        children: dict[str, list[FailedSpan]] = defaultdict(list)
        for span in failed:
            if span.parent_span_id:
                children[span.parent_span_id].append(span)
        attempts = _attempts(cursor, trace_id, failed)
        handled = frozenset(
            span.span_id
            for span in failed
            if span.shown and span.parent_span_id and not _propagated(span, by_id.get(span.parent_span_id))
        )
        # Where each failure began: a shown failed span that no failed child passed its failure up to.
        origins = [
            span
            for span in failed
            if span.shown and not any(_passes_up(child, span) for child in children.get(span.span_id, []))
        ]
        errors = tuple(
            span_id
            for _, span_id in sorted(
                [(span.start_ms, span.span_id) for span in origins]
                + [(attempt.start_ms, span_id) for span_id, attempt in attempts.items()]
            )
        )
        cause = _cause(cursor, trace_id, failed, children, attempts, names) if status == "failed" else None
    refused = {span_id: attempt.why for span_id, attempt in attempts.items()}
    return Faults(cause, handled, refused, errors)


def run_cause(store: Store, trace_id: str) -> Cause:
    """The cause of run `trace_id`'s failure; `NoFailure` when it did not fail."""
    cause = run_faults(store, trace_id).cause
    if cause is None:
        raise NoFailure(f"run {trace_id} did not fail: it has no cause to show")
    return cause


def _passes_up(child: FailedSpan, parent: FailedSpan) -> bool:
    """Whether `parent` failed of `child`'s failure, as far as where failures began is concerned: a model
    call's failure is its turn's own."""
    return not child.instant and child.kind != "model:call" and _propagated(child, parent)


def _propagated(child: FailedSpan, parent: FailedSpan | None) -> bool:
    """Whether `child`'s failure is what `parent` failed with (not caught between them)."""
    if parent is None:
        return False
    if parent.error is None or child.error is None:
        return True  # a failure with no message: nothing tells it apart from the parent's, taken as passed up
    return child.error == parent.error or child.error in parent.error


def _cause(
    cursor: Any,
    trace_id: str,
    failed: list[FailedSpan],
    children: dict[str, list[FailedSpan]],
    attempts: dict[str, Attempt],
    names: dict[str, tuple[str, str | None]],
) -> Cause | None:
    """Down from the failed root along the failure's propagation to the innermost span it came from;
    `names`: the names and callIds of failed spans known already."""
    spans = [span for span in failed if not span.instant]
    if not spans:
        return None
    top = min(span.depth for span in spans)
    step = next(span for span in spans if span.depth == top)
    path = [step]
    while True:
        below = [child for child in children.get(step.span_id, []) if not child.instant and _propagated(child, step)]
        if not below:
            break
        step = max(below, key=lambda child: (child.end_ms or child.start_ms, child.start_ms))
        path.append(step)
    # Spans without a message below the last one with it (a failed turn's model call) add nothing to it.
    while len(path) > 1 and path[-1].error is None and any(span.error is not None for span in path):
        path.pop()
    innermost = path[-1]
    chain = [span for span in path if span.shown]
    refused = _last_refused(innermost, children, attempts)
    if refused is not None:
        chain.append(refused)
    if not chain:
        return None
    steps = _named(cursor, trace_id, chain, names)
    return Cause(
        span_id=steps[-1].span_id,
        call_id=steps[-1].call_id,
        chain=steps,
        error_name=_error_name(cursor, innermost),
        error_message=innermost.error or "",
        attempt_error=attempts[refused.span_id].why if refused is not None else None,
    )


def _last_refused(
    span: FailedSpan, children: dict[str, list[FailedSpan]], attempts: dict[str, Attempt]
) -> FailedSpan | None:
    """The last turn of prompt loop `span` whose answer was refused, as a step of the chain."""
    refusals = [child for child in children.get(span.span_id, []) if child.kind.startswith("validation:")]
    if not refusals:
        return None
    last = refusals[-1]
    turns = [
        (attempt.start_ms, span_id)
        for span_id, attempt in attempts.items()
        if attempt.loop == span.span_id and attempt.start_ms <= last.start_ms
    ]
    if not turns:
        return None
    start, span_id = max(turns)
    return FailedSpan(span_id, span.span_id, "turn", False, start, None, last.error, None, 0)


def _attempts(cursor: Any, trace_id: str, failed: list[FailedSpan]) -> dict[str, Attempt]:
    """The turns whose answer was refused: each `validation:*` failure's turn (the last of its prompt loop
    to start before it), with its start and why."""
    refusals = [span for span in failed if span.instant and span.kind.startswith("validation:")]
    if not refusals:
        return {}
    loops = sorted({span.parent_span_id for span in refusals if span.parent_span_id})
    marks = ", ".join("?" for _ in loops)
    turns = cursor.execute(
        f"""
        SELECT parent_span_id, span_id, start_ts FROM spans
        WHERE trace_id = ? AND kind = 'turn' AND parent_span_id IN ({marks}) ORDER BY start_ts
        """,
        [trace_id, *loops],
    ).fetchall()
    by_loop: dict[str, list[tuple[float, str]]] = defaultdict(list)
    for loop, span_id, start in turns:
        by_loop[loop].append((start, span_id))
    found: dict[str, Attempt] = {}
    for refusal in refusals:
        before = [turn for turn in by_loop.get(refusal.parent_span_id or "", []) if turn[0] <= refusal.start_ms]
        if before:
            start, span_id = before[-1]
            found[span_id] = Attempt(start, refusal.error or refusal.kind, refusal.parent_span_id or "")
    return found


def _named(
    cursor: Any, trace_id: str, chain: list[FailedSpan], known: dict[str, tuple[str, str | None]]
) -> tuple[ChainStep, ...]:
    """The chain's spans with their names and callIds: from `known`, the others read (by their keys when
    the run is keyed)."""
    named = dict(known)
    missing = [span.span_id for span in chain if span.span_id not in named]
    if missing:
        where, params = span_keys.where_spans(cursor, trace_id, missing)
        rows = cursor.execute(f"SELECT span_id, name, call_id FROM spans WHERE {where}", params).fetchall()
        named |= {span_id: (name, call_id) for span_id, name, call_id in rows}
    return tuple(ChainStep(span.span_id, span.kind, *named.get(span.span_id, (span.kind, None))) for span in chain)


def _error_name(cursor: Any, span: FailedSpan) -> str:
    """The name of the error span ended with (`PromptError`), from its end event; `Error` when it has none."""
    if span.end_event_id is None:
        return "Error"
    rows = cursor.execute("SELECT body FROM events WHERE event_id = ?", [span.end_event_id]).fetchall()
    error = orjson.loads(rows[0][0]).get("error") if rows else None
    name = error.get("name") if isinstance(error, dict) else None
    return name if isinstance(name, str) and name else "Error"
