"""The process page's rewind panel for one entry: the plan of rewinding to just before it, or, for a
`rewind` entry, what that rewind did, where it was recorded and the state it left.

The plan is the journal's own (`RewindEngine.plan`, through `devtool.actions.process_rewind`), so
the page and the process agree on what a rewind means; nothing is written.
"""

from __future__ import annotations

from typing import Any

from devtool.actions.process_rewind import ProcessRewindError, plan_rewind, rewinds_dir
from devtool.journal import RewindMode
from devtool.store import NotFoundError, Store
from devtool.store.queries import StoredEntry, journal_entries
from devtool.store.queries.journal_files import entry_source

MODE_WORDS = {
    RewindMode.BOTH: "both: state and conversation as they were before",
    RewindMode.CONVERSATION_ONLY: "conversation only: keep the state, take back the conversation",
    RewindMode.CODE_ONLY: "code only: take back the state, keep the conversation",
    RewindMode.SUMMARIZE: "summarize: keep both, add a note summarizing what happened",
}


def rewind_panel(store: Store, process_id: str, entry_id: str, mode: str) -> dict[str, Any]:
    """What `_process_rewind.html` shows for `entry_id`; `NotFoundError` when the journal has no such entry."""
    context: dict[str, Any] = {
        "process_id": process_id,
        "entry_id": entry_id,
        "mode": mode,
        "modes": MODE_WORDS,
        "error": None,
    }
    entries = journal_entries(store, process_id, limit=1 << 62)
    entry = next((e for e in entries if e.entry_id == entry_id), None)
    if entry is None:
        raise NotFoundError(f"no entry {entry_id!r} in process journal {process_id!r}")
    context["entry"] = entry
    if entry.entry_type == "rewind":
        context["rewound"] = _state_after(entries, entry)
        recorded_in = entry_source(store, process_id, entry_id)
        context["recorded_in"] = recorded_in
        context["devtool_only"] = recorded_in is not None and recorded_in.parent == rewinds_dir(store)
        return context
    try:
        context["plan"] = plan_rewind(store, process_id, entry_id, mode)
    except ProcessRewindError as exc:
        context["error"] = str(exc)
    return context


def _state_after(entries: list[StoredEntry], rewind: StoredEntry) -> dict[str, Any] | None:
    """The state a rewind left: the checkpoint recorded right after it (`apply_rewind` writes one)."""
    position = entries.index(rewind)
    for entry in entries[position + 1 :]:
        if entry.entry_type == "checkpoint":
            state = entry.data.get("state", entry.data)
            return state if isinstance(state, dict) else None
        if entry.entry_type == "rewind":
            break
    return None
