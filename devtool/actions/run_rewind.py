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
from typing import Literal

from devtool.core import RestoreError
from devtool.core.debugger import restore_snapshot
from devtool.core.frame_cut import OpenTree, restore_open
from devtool.core.restore import IGNORED_TYPES, UNREAD_FIELDS, RestoreWarning
from devtool.store import Store, save_snapshot
from devtool.store.collector import collector_paused
from devtool.store.frame_index_cut import read_cut
from devtool.store.queries import Cut, get_run, run_events
from devtool.store.snapshots import save_tree

Anchor = Literal["before", "after"]
ANCHORS: tuple[Anchor, ...] = ("before", "after")


class RewindError(Exception):
    """A rewind that cannot be made (bad anchor, or `restore_snapshot` refused the cut)."""


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
    tree = restore_from_index(store, trace_id, span_id, edge)
    if tree is not None:
        return save_tree(store, tree.top, tree.nodes, created_by=created_by)
    # A big run's cut is hundreds of thousands of dicts: with the cycle collector on, it would walk
    # them again and again while they are made (several times the cost of the restore itself).
    with collector_paused(), warnings.catch_warnings():
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
