"""Rewind a run: its snapshot at a span's start or end, made from its stored events and kept by content id.

This is the one place that decides how a cut is made. A big run with a fresh frame index (built in
the background by `frame_indexer`) is rewound from it: the frames the cut leaves open are rebuilt
from their own events (`core.frame_cut.restore_open`), and every frame that had ended is a node
prepared once (and a wide frame's children that had all ended, a chunk prepared once), so a cut
costs about the same early or late in a run of any size. Any other
run, a run that grew since it was indexed, and a cut the index does not make, are rewound by
`restore_snapshot` over the run's events: the store hands it only what it reads (the events up to
the cut, without the types restore ignores, both left out in DuckDB). Both ways give the same
snapshot, a pure function of the trace and the cut (its `timestamp` is the cut event's, its
`processId` the trace id), stored under the hash of its content: rewinding to the same cut of the
same trace gives the same id, and the second time it is found rather than stored again.
"""

from __future__ import annotations

import warnings
from typing import Any, Literal

from devtool.core import RestoreError
from devtool.core.debugger import restore_snapshot
from devtool.core.frame_cut import OpenTree, restore_open
from devtool.core.restore import IGNORED_TYPES, UNREAD_FIELDS, RestoreWarning
from devtool.store import Store, save_snapshot
from devtool.store.collector import collector_paused
from devtool.store.frame_index_cut import read_cut
from devtool.store.lake import LakeError, Opening, being_copied, copied_unordered, prefix_events
from devtool.store.queries import Cut, get_run, run_events
from devtool.store.snapshots import save_tree

Anchor = Literal["before", "after"]
ANCHORS: tuple[Anchor, ...] = ("before", "after")


class RewindError(Exception):
    """A rewind that cannot be made (bad anchor, or `restore_snapshot` refused the cut)."""


class LakeNeeded(RewindError):
    """A rewind that needs the team's lake and cannot read it (none attached, or it fails): of a run still
    being copied (its snapshot would be of a part of it), or copied out of order (`lake.prefix`)."""


def rewind(store: Store, trace_id: str, span_id: str, anchor: str, *, created_by: str | None = None) -> str:
    """Store the snapshot of run `trace_id` just before or just after span `span_id`; return its id.

    `NotFoundError` when the run is not in the store; `RewindError` saying why when the cut cannot
    be restored (the span is not in the run, has no end yet, is the run's first event...).
    """
    if anchor not in ANCHORS:
        raise RewindError(f'anchor must be "before" or "after", not {anchor[:40]!r}')
    if get_run(store, trace_id, kind="trace").from_opentelemetry:
        raise RewindError(
            "the run came from OpenTelemetry: it has no journal of inputs and outputs to restore, "
            "so it cannot be rewound or replayed"
        )
    edge: Anchor = "before" if anchor == "before" else "after"
    copying = being_copied(store, trace_id)
    lake_order = copying is not None or copied_unordered(store, trace_id)
    # Neither is rewound from an index (none is built of them: `runs_to_index`).
    tree = None if lake_order else restore_from_index(store, trace_id, span_id, edge)
    if tree is not None:
        return save_tree(store, tree.top, tree.nodes, created_by=created_by)
    # A big run's cut is hundreds of thousands of dicts: with the cycle collector on, it would walk
    # them again and again while they are made (several times the cost of the restore itself).
    with collector_paused(), warnings.catch_warnings():
        if lake_order:
            events = _in_lake_order(store, trace_id, copying, span_id, edge)
        else:
            events = run_events(
                store, trace_id, cut=Cut(span_id, edge), skip_types=IGNORED_TYPES, drop_fields=UNREAD_FIELDS
            )
        # Malformed events the restore skipped are the loader's business: it already reported them.
        warnings.simplefilter("ignore", RestoreWarning)
        try:
            snapshot = restore_snapshot(events, span_id=span_id, anchor=edge)
        except RestoreError as exc:
            raise RewindError(str(exc)) from None
        del events
        return save_snapshot(store, snapshot, created_by=created_by, trusted=True)


def _in_lake_order(
    store: Store, trace_id: str, copying: Opening | None, span_id: str, anchor: Anchor
) -> list[dict[str, Any]]:
    """The events up to the cut of a run being copied from the lake (those not here copied first) or copied
    out of order, in the lake's order (`lake.prefix`); `LakeNeeded` when no lake can be read."""
    why = "no team lake is attached"
    if store.lake is not None:
        try:
            events = prefix_events(
                store, store.lake, trace_id, span_id, anchor, skip_types=IGNORED_TYPES, drop_fields=UNREAD_FIELDS
            )
        except LakeError as exc:
            why = str(exc)
        else:
            # None: the lake has no such cut; the run's own events then say what is missing.
            if events is not None:
                return events
            return run_events(
                store, trace_id, cut=Cut(span_id, anchor), skip_types=IGNORED_TYPES, drop_fields=UNREAD_FIELDS
            )
    if copying is not None:
        raise LakeNeeded(
            f"run {trace_id} is still being copied from the team's lake ({copying.local:,} of its "
            f"{copying.total:,} events are here), and the events before this cut may not be: {why}. "
            "Try again once it is copied."
        )
    raise LakeNeeded(
        f"run {trace_id} was copied from the team's lake with a link's span first, so its events are read in "
        f"the lake's order to rewind it: {why}. Start the DevTool with its lake (devtool serve --lake)."
    )


def restore_from_index(store: Store, trace_id: str, span_id: str, anchor: Anchor) -> OpenTree | None:
    """The run's snapshot at the cut, from its frame index; None when the run has no fresh index or
    this cut is one the index does not make (then `restore_snapshot` over the run's events does)."""
    with collector_paused():
        cut = read_cut(store, trace_id, span_id, anchor)
        if cut is None:
            return None
        try:
            return restore_open(
                cut.rows,
                span_id=span_id,
                anchor=anchor,
                open_frames=cut.open_frames,
                sealed=cut.sealed,
                chunks=cut.chunks,
                children=cut.children,
            )
        except RestoreError:
            return None
