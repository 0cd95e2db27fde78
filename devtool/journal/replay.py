"""`ReplayEngine`: rebuild a process's current state forward from its last checkpoint (crash recovery).

`recover(process_id)` starts from `last_checkpoint` (its `context_state`, and `lifecycle_state`,
"running" if it has none; "created" and nothing when there is no checkpoint) and replays, of the
entries after the last `checkpoint` entry (all of them when there is no checkpoint at all),
`state_transition` and `context_update`. Like the published engine it does not apply earlier `rewind`
entries: a process that rewinds writes a checkpoint right after the rewind entry (`ProcessRecorder`
does), so recovery starts from the rewound state.

It answers the published dict: `context_state`, `lifecycle_state`, `last_entry_type`,
`entries_replayed`, `mission` (the checkpoint's, or None) and `checkpoint` (the raw one, or `{}`).
Stricter than that engine: a lifecycle state is always a string (a `to_state` that is not a non-empty
string is ignored, as is a checkpoint `lifecycle_state` that is not a string).
"""

from __future__ import annotations

from typing import Any

from devtool.journal.log import open_log
from devtool.journal.protocol import JournalProvider

_REPLAYED = frozenset({"state_transition", "context_update"})


class ReplayEngine:
    """Reads a journal forward; holds nothing but the journal."""

    def __init__(self, journal: JournalProvider) -> None:
        self._journal = journal

    async def recover(self, process_id: str) -> dict[str, Any]:
        """The process's state now: the last checkpoint plus what the journal recorded after it."""
        log = await open_log(self._journal, process_id, with_checkpoint=True)
        checkpoint = log.checkpoint
        context_state: dict[str, Any] = {}
        lifecycle_state = "created"
        if checkpoint:
            saved_context = checkpoint.get("context_state")
            context_state = dict(saved_context) if isinstance(saved_context, dict) else {}
            saved_lifecycle = checkpoint.get("lifecycle_state", "running")
            lifecycle_state = saved_lifecycle if isinstance(saved_lifecycle, str) else "running"
        if checkpoint is None:
            start = 0
        else:
            last = log.last_of("checkpoint")
            start = log.end if last is None else last + 1

        for _, entry_type, data in log.scan(_REPLAYED, start, log.end):
            if entry_type == "context_update":
                key = data.get("key")
                if isinstance(key, str):
                    context_state[key] = data.get("value")
            else:
                to_state = data.get("to_state")
                if isinstance(to_state, str) and to_state:
                    lifecycle_state = to_state

        last_entry = log.last_from(start)
        return {
            "context_state": context_state,
            "lifecycle_state": lifecycle_state,
            "last_entry_type": last_entry.entry_type if last_entry else "",
            "entries_replayed": log.count(start),
            "mission": (checkpoint or {}).get("mission"),
            "checkpoint": dict(checkpoint or {}),
        }
