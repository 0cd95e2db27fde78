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
its span keys (`span_failures`, with their names and callIds, read for the chain only: made by the
load or the server's indexer); another run's are a read of `spans` filtered on the run and on
`status`, which touches most of its row groups, as failed spans are scattered over the run (0.1-0.2 s
a million events). The answer is kept for the run as it is (`KEPT_RUNS`).
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

# A run's failed spans: the columns of `FailedSpan` (`_COLUMNS`) and `start_event_id`, from `spans` (a
# keyed run's from its span keys: `span_keys.failed_relation`).
_COLUMNS = "span_id, parent_span_id, kind, instant, start_ts, end_ts, error, end_event_id, depth"
_FAILED = f"(SELECT {_COLUMNS}, start_event_id FROM spans WHERE trace_id = $trace AND status = 'failed')"
# Whether failed span `c`'s failure is what failed span `p` failed with, not caught between them: the same
# message or one that holds it; a failure with no message is taken as passed up (nothing tells it apart).
_PASSED = "(p.error IS NULL OR c.error IS NULL OR c.error = p.error OR contains(p.error, c.error))"
_SHOWN = f"NOT c.instant AND c.kind NOT IN {HIDDEN_KINDS}"
# Handled: a shown failed span whose parent did not fail with its error.
_HANDLED = f"""
    SELECT c.span_id FROM {{failed}} c LEFT JOIN {{failed}} p ON p.span_id = c.parent_span_id
    WHERE {_SHOWN} AND coalesce(c.parent_span_id, '') <> '' AND NOT (p.span_id IS NOT NULL AND {_PASSED})
"""
# Where failures began: a shown failed span that no failed child passed its failure up to (a model call's
# failure is its turn's own).
_ORIGINS = f"""
    SELECT p.start_ts, p.span_id FROM {{failed}} p
    WHERE NOT p.instant AND p.kind NOT IN {HIDDEN_KINDS} AND NOT EXISTS (
        SELECT 1 FROM {{failed}} c
        WHERE c.parent_span_id = p.span_id AND NOT c.instant AND c.kind <> 'model:call' AND {_PASSED}
    )
"""


class _Failed:
    """A run's failed spans as SQL reads them: the few a walk asks for are made `FailedSpan`s (a run of
    ten million events has 46,668; making each of them one and walking them all in Python was most of
    a first ask, 1.2 s)."""

    def __init__(self, cursor: Any, trace_id: str) -> None:
        self.cursor = cursor
        keyed = span_keys.failed_relation(cursor, trace_id)
        self.relation, self.params = (keyed, {}) if keyed is not None else (_FAILED, {"trace": trace_id})

    def rows(self, sql: str, **params: object) -> list[tuple[Any, ...]]:
        return list(self.cursor.execute(sql.format(failed=self.relation), {**self.params, **params}).fetchall())

    def spans(
        self, where: str, *, order: str = "start_ts, start_event_id", most: int | None = None, **params: object
    ) -> list[FailedSpan]:
        """The failed spans that meet `where`, in `order` (the first `most`)."""
        limit = "" if most is None else f" LIMIT {int(most)}"
        rows = self.rows(f"SELECT {_COLUMNS} FROM {{failed}} WHERE {where} ORDER BY {order}{limit}", **params)
        return [FailedSpan(*row) for row in rows]

    def passed_on(self, parent: FailedSpan) -> FailedSpan | None:
        """The failed child of `parent` (not an instant) whose failure `parent` failed with (`_PASSED`), the
        last to end when several did (then the last to start, then the first stored)."""
        found = self.spans(
            "parent_span_id = $parent AND NOT instant "
            "AND (error IS NULL OR $error IS NULL OR error = $error OR contains($error, error))",
            order="coalesce(nullif(end_ts, 0), start_ts) DESC, start_ts DESC, start_event_id",
            most=1,
            parent=parent.span_id,
            error=parent.error,
        )
        return found[0] if found else None


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
        failed = _Failed(cursor, trace_id)
        attempts = _attempts(cursor, trace_id, failed.spans("instant AND kind LIKE 'validation:%'"))
        handled = frozenset(span_id for (span_id,) in failed.rows(_HANDLED))
        errors = tuple(
            span_id
            for _, span_id in sorted(
                failed.rows(_ORIGINS) + [(attempt.start_ms, span_id) for span_id, attempt in attempts.items()]
            )
        )
        cause = _cause(cursor, trace_id, failed, attempts) if status == "failed" else None
    refused = {span_id: attempt.why for span_id, attempt in attempts.items()}
    return Faults(cause, handled, refused, errors)


def run_cause(store: Store, trace_id: str) -> Cause:
    """The cause of run `trace_id`'s failure; `NoFailure` when it did not fail."""
    cause = run_faults(store, trace_id).cause
    if cause is None:
        raise NoFailure(f"run {trace_id} did not fail: it has no cause to show")
    return cause


def _cause(cursor: Any, trace_id: str, failed: _Failed, attempts: dict[str, Attempt]) -> Cause | None:
    """Down from the failed root along the failure's propagation to the innermost span it came from."""
    top = failed.spans("NOT instant", order="depth, start_ts, start_event_id", most=1)
    if not top:
        return None
    step = top[0]
    path = [step]
    while (below := failed.passed_on(step)) is not None:
        step = below
        path.append(step)
    # Spans without a message below the last one with it (a failed turn's model call) add nothing to it.
    while len(path) > 1 and path[-1].error is None and any(span.error is not None for span in path):
        path.pop()
    innermost = path[-1]
    chain = [span for span in path if span.shown]
    refused = _last_refused(innermost, failed, attempts)
    if refused is not None:
        chain.append(refused)
    if not chain:
        return None
    steps = _named(cursor, trace_id, chain)
    return Cause(
        span_id=steps[-1].span_id,
        call_id=steps[-1].call_id,
        chain=steps,
        error_name=_error_name(cursor, innermost),
        error_message=innermost.error or "",
        attempt_error=attempts[refused.span_id].why if refused is not None else None,
    )


def _last_refused(span: FailedSpan, failed: _Failed, attempts: dict[str, Attempt]) -> FailedSpan | None:
    """The last turn of prompt loop `span` whose answer was refused, as a step of the chain."""
    refusals = failed.spans("parent_span_id = $parent AND kind LIKE 'validation:%'", parent=span.span_id)
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


def _attempts(cursor: Any, trace_id: str, refusals: list[FailedSpan]) -> dict[str, Attempt]:
    """The turns whose answer was refused: each `validation:*` failure's (`refusals`) turn (the last of its
    prompt loop to start before it), with its start and why."""
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


def _named(cursor: Any, trace_id: str, chain: list[FailedSpan]) -> tuple[ChainStep, ...]:
    """The chain's spans with their names and callIds: a keyed run's failed ones from its failed spans,
    the others read (by their keys when the run is keyed)."""
    ids = [span.span_id for span in chain]
    named = span_keys.failed_names(cursor, trace_id, ids)
    missing = [span_id for span_id in ids if span_id not in named]
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
