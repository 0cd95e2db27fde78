"""The process page's rewind panel for one entry: the plan of rewinding to just before it, or, for a
`rewind` entry, what that rewind did, where it was recorded and the state it left.

The plan is the journal's own (`RewindEngine.plan`, through `devtool.actions.process_rewind`), so
the page and the process agree on what a rewind means; nothing is written. The panel lists the
entries a rewind reaches (the target and every one after it: the first `LISTED` of them), each with
what the chosen mode does to it, and says where Apply would write before it is asked to confirm.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from devtool.actions.process_rewind import ProcessRewindError, destination, plan_rewind, rewinds_dir
from devtool.journal import RewindMode
from devtool.journal.entries import CODE_TYPES, CONVERSATION_TYPES
from devtool.store import Store
from devtool.store.queries import StoredEntry, journal_entries
from devtool.store.queries.journal_files import entry_source
from devtool.store.queries.journal_lane import entry_position
from devtool.web.pages.journal_words import KNOWN_TYPES, summarize

LISTED = 50  # entries of a plan listed one by one; the rest are counted

MODE_WORDS = {
    RewindMode.BOTH: "both: state and conversation as they were before",
    RewindMode.CONVERSATION_ONLY: "conversation only: keep the state, take back the conversation",
    RewindMode.CODE_ONLY: "code only: take back the state, keep the conversation",
    RewindMode.SUMMARIZE: "summarize: keep both, add a note summarizing what happened",
}

# What a mode takes back, by the group an entry's type is in (the journal's own groups).
_TAKEN_BACK = {
    RewindMode.BOTH: {"conversation", "code/state"},
    RewindMode.CONVERSATION_ONLY: {"conversation"},
    RewindMode.CODE_ONLY: {"code/state"},
    RewindMode.SUMMARIZE: set(),
}


@dataclass(frozen=True)
class PlanRow:
    """One entry a rewind reaches, and what the chosen mode does to it."""

    number: int  # 1-based position in the journal
    entry: StoredEntry
    summary: str
    known: bool
    group: str  # conversation | code/state | other
    fate: str  # taken back | kept | summarized | no state


def rewind_panel(store: Store, process_id: str, entry_id: str, mode: str, *, confirm: bool = False) -> dict[str, Any]:
    """What `_process_rewind.html` shows for `entry_id`; `NotFoundError` when the journal has no such entry."""
    position = entry_position(store, process_id, entry_id)
    following = journal_entries(store, process_id, limit=LISTED, offset=position)
    entry = following[0]
    context: dict[str, Any] = {
        "process_id": process_id,
        "entry_id": entry_id,
        "number": position + 1,
        "mode": mode,
        "modes": MODE_WORDS,
        "error": None,
        "entry": entry,
        "confirm": confirm,
    }
    if entry.entry_type == "rewind":
        context["rewound"] = _state_after(following)
        recorded_in = entry_source(store, process_id, entry_id)
        context["recorded_in"] = recorded_in
        context["devtool_only"] = recorded_in is not None and recorded_in.parent == rewinds_dir(store)
        return context
    try:
        plan = plan_rewind(store, process_id, entry_id, mode)
    except ProcessRewindError as exc:
        context["error"] = str(exc)
        return context
    other = plan.entries_affected - plan.conversation_entries_affected - plan.code_entries_affected
    context.update(
        plan=plan,
        other=other,
        rows=[_row(position + 1 + index, reached, plan.mode) for index, reached in enumerate(following)],
        more=plan.entries_affected - len(following),
        destination=destination(store, process_id),
    )
    return context


def _row(number: int, entry: StoredEntry, mode: RewindMode) -> PlanRow:
    group = (
        "conversation"
        if entry.entry_type in CONVERSATION_TYPES
        else "code/state"
        if entry.entry_type in CODE_TYPES
        else "other"
    )
    if group == "other":
        fate = "no state"
    elif mode is RewindMode.SUMMARIZE:
        fate = "summarized"
    else:
        fate = "taken back" if group in _TAKEN_BACK[mode] else "kept"
    return PlanRow(number, entry, summarize(entry.entry_type, entry.data), entry.entry_type in KNOWN_TYPES, group, fate)


def _state_after(following: list[StoredEntry]) -> dict[str, Any] | None:
    """The state a rewind (`following[0]`) left: the checkpoint recorded right after it (`apply_rewind`
    writes one)."""
    for entry in following[1:]:
        if entry.entry_type == "checkpoint":
            state = entry.data.get("state", entry.data)
            return state if isinstance(state, dict) else None
        if entry.entry_type == "rewind":
            break
    return None
