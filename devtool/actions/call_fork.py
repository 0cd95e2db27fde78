"""A fork of a whole run with one call changed: "what if this tool had returned that", from a run's page.

The run is rewound to just after its root span ends (its whole journal, so a replay serves every call
the edit does not reach), and that snapshot is forked with the edit (`fork.fork`, and so
`devtool.core.counterfactual.fork_snapshot`): the call's output, or a turn's input messages.
The fork is stored with the rewind as its parent; its page offers Replay.
"""

from __future__ import annotations

from typing import Any

from devtool.actions.fork import Edits, fork
from devtool.actions.run_rewind import RewindError, rewind
from devtool.store import Store, get_snapshot, save_snapshot


def fork_call(
    store: Store,
    trace_id: str,
    call_id: str,
    *,
    output: Any = None,
    messages: list[Any] | None = None,
    created_by: str | None = None,
) -> str:
    """The id of the stored fork of run `trace_id` whose call `call_id` returns `output` (or, with
    `messages`, sends those); `RewindError` for a run that cannot be rewound whole, `ForkError` for an
    edit that cannot be made, `NotFoundError` for no such run."""
    rows = store.query(
        "SELECT span_id FROM events WHERE trace_id = ? AND type = 'runWith:end' ORDER BY event_id LIMIT 1", [trace_id]
    )
    if not rows:
        raise RewindError("the run has not ended (no runWith:end): fork it once it has")
    parent_id = rewind(store, trace_id, rows[0][0], "after", created_by=created_by)
    parent = dict(get_snapshot(store, parent_id).snapshot)
    edits = Edits(messages={call_id: messages}) if messages is not None else Edits(outputs={call_id: output})
    forked = fork(parent, edits, parent_id=parent_id)
    return save_snapshot(store, forked, parent_id=parent_id, created_by=created_by)
