"""An entry of a process journal and the process's state just before and just after it.

Both states come from the store's `journal_states`: the journal library's rewind rule (what
`RewindEngine.apply(record=False)` rebuilds), in one pass; nothing is written. The page shows what
the entry changed: context keys added, removed or changed, the lifecycle, and the conversation (what
it kept, dropped and added). A rewind entry changes nothing by itself: the state it left is the
checkpoint recorded right after it, so its "after" is the state after that checkpoint (what the
rewind panel's "State the rewind left" shows), not "0 changes".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from devtool.actions.key_diff import Change, diff
from devtool.store import Store
from devtool.store.queries import JournalState, StoredEntry, journal_entries, journal_states
from devtool.store.queries.journal_lane import JournalSpan, entry_position
from devtool.web.links import run_url
from devtool.web.pages.journal_words import KNOWN_TYPES, summarize
from devtool.web.pages.timeline_layout import format_duration

CONVERSATION_TAIL = 6  # messages shown of the conversation an entry leaves unchanged


@dataclass(frozen=True)
class Conversation:
    """An entry's effect on the conversation: what it kept (its last messages), dropped and added."""

    earlier: int  # kept messages not shown
    kept: tuple[dict[str, Any], ...]
    removed: tuple[dict[str, Any], ...]
    added: tuple[dict[str, Any], ...]


@dataclass(frozen=True)
class EntryDetail:
    entry: StoredEntry
    summary: str
    known: bool
    number: int  # 1-based position in the journal
    offset: str  # time since the journal's first entry
    run_href: str | None
    before: JournalState
    after: JournalState
    context: tuple[Change, ...]
    conversation: Conversation

    @property
    def context_changes(self) -> int:
        return sum(change.change != "same" for change in self.context)

    @property
    def lifecycle_changed(self) -> bool:
        return self.before.lifecycle_state != self.after.lifecycle_state


def build_detail(store: Store, process_id: str, entry_id: str, span: JournalSpan) -> EntryDetail:
    """The entry and the process's state just before and just after it; `NotFoundError` if it is not there."""
    before, after = journal_states(store, process_id, entry_id)
    entry = before.entry
    if entry.entry_type == "rewind":
        after = _rewound(store, process_id, entry_id) or after
    return EntryDetail(
        entry=entry,
        summary=summarize(entry.entry_type, entry.data),
        known=entry.entry_type in KNOWN_TYPES,
        number=before.entries_before + 1,
        offset="+" + format_duration(entry.ts_ms - span.start_ms),
        run_href=run_url(entry.trace_id) if entry.trace_id else None,
        before=before,
        after=after,
        context=tuple(diff(before.context_state, after.context_state)),
        conversation=_conversation(before.conversation, after.conversation),
    )


# A rewind's checkpoint is the next entry `apply_rewind` writes: looked for among the few after it.
_REWIND_REACH = 8


def _rewound(store: Store, process_id: str, entry_id: str) -> JournalState | None:
    """The state rewind `entry_id` left: just after the checkpoint recorded right after it."""
    position = entry_position(store, process_id, entry_id)
    for following in journal_entries(store, process_id, limit=_REWIND_REACH, offset=position + 1):
        if following.entry_type == "checkpoint":
            return journal_states(store, process_id, following.entry_id)[1]
        if following.entry_type == "rewind":
            break
    return None


def _conversation(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> Conversation:
    same = 0
    for old, new in zip(before, after, strict=False):
        if old != new:
            break
        same += 1
    shown = min(same, CONVERSATION_TAIL)
    return Conversation(
        earlier=same - shown,
        kept=tuple(before[same - shown : same]),
        removed=tuple(before[same:]),
        added=tuple(after[same:]),
    )
