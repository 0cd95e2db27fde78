"""`restore_snapshot`: an AgentSnapshot rebuilt from a flat list of trace events, at any span.

This is the half of time travel that needs no snapshot to have been taken: events are enough, so it
works on a production run (snapshots off), on a trace file, and on traces of the TypeScript library.

The cut. Events are sorted by timestamp, stably (equal timestamps keep list order). With no
`span_id` the cut is the last event. `anchor="after"` keeps everything up to and including the
span's end event; `anchor="before"` keeps everything before its start event, so the span runs again
on a replay. Only the run (traceId) the cut lies in is rebuilt, so a file that several runs appended
to restores the one asked for.

The rebuild, in one pass over the events up to the cut: frames from `agent:start`/`agent:end`
(the run's own frame from `runWith:start`/`runWith:end`, or a synthetic one when those are missing);
memory from `generation:end` (and `runWith:end` for the root); the prompt journal from successful
`turn:end` events with a contentHash and a message (or, from an instrumented SDK request, the
`response` it journaled); the tool journal from each successful result of
a `tools:execute:end` (failed results are skipped, so those calls run again on a replay; a result
marked `tombstone` becomes a tombstone entry, never replayed); budgets from each `model:call:end`'s
`usage` and `costs`, on the frame of its turn. Every span is attributed to a frame
through `parentSpanId`, so sibling agents whose events interleave (parallel sub-agents) each get their
own calls; an event whose parent span is unknown falls back to the innermost agent still running.
callIds come from the events (ours carry them), else are made as the runtime makes them.

Repair. Frames open at the cut are `running`. A frame that ends while children are still running
fails them, with an error that says so (a detached child the parent did not await), and so is a
child that starts after its parent ended; if such a child's own end comes later in the cut, its
real outcome replaces the repair.

What we do differently from the TypeScript library's restore, on purpose: nesting by parent span
rather than by stack order alone (it misplaces interleaved siblings); memory attributed by span
(it gives a zombie child its parent's memory); a repaired failure carries a message (its error
serialises to `{}`); the snapshot is rooted at the run's own frame (`callId` "root", as
`dump_snapshot` roots it), where it roots at the first agent; `processId` is the traceId and
`timestamp` the cut event's, so a restore is a pure function of its arguments; every frame's
`budgetState` rebuilt from the `model:call:end` usage of its own turns (own) and its subtree's
(aggregate), where it reports zeros (its `runWith` requires the field; a frame's budget is what a
budget-limited agent resumes with).

Malformed events (no trace context, wrong types, unknown type) are skipped and counted in one
`RestoreWarning`; a trace with anything usable restores. An event whose `schemaVersion` is another
number is an error: that trace means something this build cannot know.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import Any, Final, cast

from devtool.core.errors import RestoreError
from devtool.core.restore_timeline import Skipped, timeline
from devtool.core.restore_walk import LEAVES, Anchor, Walk
from devtool.core.snapshot import AgentSnapshot

# What a caller restoring at a span of a big run may leave out of the events it hands over (a store
# filtering in its query): the walk reads nothing from these types. The span's own start or end event
# must stay, and a restore without span_id needs them all (its cut is the last event of any type).
IGNORED_TYPES: Final = frozenset(LEAVES)
# Top-level fields of an event that restore never reads, and that can be large (a turn's whole
# conversation, tool schemas, props): a store may leave them out of the events it hands over.
UNREAD_FIELDS: Final = frozenset({"messages", "toolConfig", "schema", "props", "config", "scopeLayers", "resourceKeys"})


class RestoreWarning(UserWarning):
    """`restore_snapshot` skipped malformed events; the message counts them by reason."""


def restore_snapshot(events: Iterable[Any], *, span_id: str | None = None, anchor: Anchor = "after") -> AgentSnapshot:
    """The snapshot of the run at the cut: the last event, or `anchor` (before/after) span `span_id`.

    `events` are TraceEvent dicts in any order, ours or the TypeScript library's. The result is a
    JSON-ready snapshot that `run_with(snapshot=...)` replays. Its values (memory, journal outputs,
    results, errors) are the events' own objects, not copies: a copy would cost as much as the rest
    of a restore. Copy it (`copy.deepcopy`) before editing it in place if the events must not change.
    Raises `RestoreError` saying what is wrong: an empty trace, an unknown schemaVersion, a span that
    is not in the trace or has no start (before) or end (after), `before` the first event, or a cut
    before any agent started. An empty `span_id` means none, as in the TypeScript library. Malformed
    events are skipped and counted in one `RestoreWarning`.
    """
    if anchor not in ("before", "after"):
        raise RestoreError(f'Restore failed: anchor must be "before" or "after", got {anchor!r}.')
    if span_id is not None and not isinstance(span_id, str):
        raise RestoreError(f"Restore failed: span_id must be a string, got {type(span_id).__name__}.")
    skipped = Skipped()
    walk = Walk(skipped)
    cut = walk.run(timeline(events, skipped), span_id or None, anchor)
    root = walk.settled_root(cut)
    snapshot = cast(AgentSnapshot, walk.envelope(cut, anchor, root.to_snapshot()))
    if skipped.count:
        warnings.warn(RestoreWarning(skipped.explain("restore_snapshot skipped ")), stacklevel=2)
    return snapshot
