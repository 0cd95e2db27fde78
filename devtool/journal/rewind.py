"""`RewindEngine`: the state just before any entry, a preview of a rewind, and a rewind in five modes.

`plan` counts what a rewind to an entry undoes: the target and every entry after it, split into
conversation entries (`user_prompt`, `assistant_message`, `conversation_turn`, `trigger_event`,
`invocation_result`) and code/state entries (`tool_call`, `tool_result`, `file_write`, `file_change`,
`code_execution`, `context_update`, `state_transition`). `apply` rebuilds the state "before" (from the
entries before the target) and "now" (from all of them) with the rules of `state`, and mixes them:

| mode | context and lifecycle | conversation |
|---|---|---|
| `BOTH` | before | before |
| `CONVERSATION_ONLY` | now | before |
| `CODE_ONLY` | before | now |
| `SUMMARIZE` | now | now, plus a system note summarizing the interval |
| `CANCEL` | nothing: the plan only, nothing written even with `record=True` |

With `record=True` one `rewind` entry is appended (target, mode, actor, counts, note); the journal is
never edited. The engine does not change a running process: applying the result, and writing the
checkpoint after the rewind entry that keeps `recover` right, is the process's job (`ProcessRecorder`).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from devtool.journal.entries import CODE_TYPES, CONVERSATION_TYPES, JournalEntry, utc_now
from devtool.journal.errors import UnknownEntryError
from devtool.journal.log import EntryLog, open_log
from devtool.journal.protocol import JournalProvider
from devtool.journal.state import STATE_TYPES, ProcessState


class RewindMode(StrEnum):
    """How much of the state a rewind takes back."""

    BOTH = "both"
    CONVERSATION_ONLY = "conversation_only"
    CODE_ONLY = "code_only"
    SUMMARIZE = "summarize"
    CANCEL = "cancel"


@dataclass(frozen=True, slots=True)
class RewindPlan:
    """What a rewind to an entry would undo (nothing is changed by making one)."""

    process_id: str
    target_entry_id: str
    mode: RewindMode
    entries_total: int
    entries_affected: int
    conversation_entries_affected: int
    code_entries_affected: int
    target_timestamp: datetime | None
    summary: str = ""
    target_entry_type: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (the published library's)."""
        return {
            "process_id": self.process_id,
            "target_entry_id": self.target_entry_id,
            "target_entry_type": self.target_entry_type,
            "mode": self.mode.value,
            "entries_total": self.entries_total,
            "entries_affected": self.entries_affected,
            "conversation_entries_affected": self.conversation_entries_affected,
            "code_entries_affected": self.code_entries_affected,
            "target_timestamp": self.target_timestamp.isoformat() if self.target_timestamp else None,
            "summary": self.summary,
        }


@dataclass(frozen=True, slots=True)
class RewindResult:
    """The state after a rewind (empty for `CANCEL`, which only carries its plan)."""

    process_id: str
    target_entry_id: str
    mode: RewindMode
    context_state: dict[str, Any] = field(default_factory=dict)
    lifecycle_state: str = "running"
    conversation: list[dict[str, Any]] = field(default_factory=list)
    summary_note: str | None = None
    plan: RewindPlan | None = None
    rewind_entry_id: str | None = None
    applied_at: datetime | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {
            "process_id": self.process_id,
            "target_entry_id": self.target_entry_id,
            "mode": self.mode.value,
            "context_state": self.context_state,
            "lifecycle_state": self.lifecycle_state,
            "conversation": self.conversation,
            "summary_note": self.summary_note,
            "plan": self.plan.to_dict() if self.plan else None,
            "rewind_entry_id": self.rewind_entry_id,
            "applied_at": self.applied_at.isoformat() if self.applied_at else None,
        }


class RewindEngine:
    """Reads a journal backward; holds nothing but the journal."""

    def __init__(self, journal: JournalProvider) -> None:
        self._journal = journal

    async def plan(
        self, *, process_id: str, target_entry_id: str, mode: RewindMode | str = RewindMode.CANCEL
    ) -> RewindPlan:
        """Preview a rewind to just before `target_entry_id`; raise `UnknownEntryError` if it is not there."""
        mode = RewindMode(mode)
        log = await open_log(self._journal, process_id)
        return _plan(log, process_id, _target(log, process_id, target_entry_id), mode)

    async def apply(
        self,
        *,
        process_id: str,
        target_entry_id: str,
        mode: RewindMode | str,
        actor: str = "system",
        record: bool = True,
    ) -> RewindResult:
        """Rebuild the state for a rewind to just before `target_entry_id`; record it unless told not to."""
        mode = RewindMode(mode)
        log = await open_log(self._journal, process_id)
        position = _target(log, process_id, target_entry_id)
        plan = _plan(log, process_id, position, mode)
        if mode is RewindMode.CANCEL:
            return RewindResult(process_id, target_entry_id, mode, plan=plan)

        before, now = _rebuild(log, position, with_now=mode is not RewindMode.BOTH)
        summary_note: str | None = None
        if mode is RewindMode.BOTH:
            chosen, conversation = before, before.conversation
        elif mode is RewindMode.CONVERSATION_ONLY:
            chosen, conversation = now, before.conversation
        elif mode is RewindMode.CODE_ONLY:
            chosen, conversation = before, now.conversation
        else:
            summary_note = _summary_note(log, position)
            chosen, conversation = (
                now,
                [*now.conversation, {"role": "system", "content": f"[rewind summary] {summary_note}"}],
            )

        applied_at = utc_now()
        rewind_entry_id: str | None = None
        if record:
            rewind_entry_id = f"rewind-{uuid.uuid4().hex}"
            await self._journal.append(
                JournalEntry(
                    entry_id=rewind_entry_id,
                    process_id=process_id,
                    timestamp=applied_at,
                    entry_type="rewind",
                    data={
                        "target_entry_id": target_entry_id,
                        "mode": mode.value,
                        "actor": actor,
                        "entries_affected": plan.entries_affected,
                        "conversation_affected": plan.conversation_entries_affected,
                        "code_affected": plan.code_entries_affected,
                        "summary_note": summary_note,
                    },
                )
            )
        return RewindResult(
            process_id,
            target_entry_id,
            mode,
            context_state=chosen.context_state,
            lifecycle_state=chosen.lifecycle_state,
            conversation=conversation,
            summary_note=summary_note,
            plan=plan,
            rewind_entry_id=rewind_entry_id,
            applied_at=applied_at,
        )


def _target(log: EntryLog, process_id: str, target_entry_id: str) -> int:
    position = log.find(target_entry_id)
    if position is None:
        raise UnknownEntryError(f"target entry id {target_entry_id!r} not found in journal of process {process_id!r}")
    return position


def _plan(log: EntryLog, process_id: str, position: int, mode: RewindMode) -> RewindPlan:
    target = log.entry(position)
    affected = log.count(position)
    conversation = log.count(position, CONVERSATION_TYPES)
    code = log.count(position, CODE_TYPES)
    if mode is RewindMode.SUMMARIZE:
        verb = "summarize without removing"
    elif mode is RewindMode.CANCEL:
        verb = "preview only"
    else:
        verb = f"rewind ({mode.value})"
    noun = "entry" if affected == 1 else "entries"
    return RewindPlan(
        process_id=process_id,
        target_entry_id=target.entry_id,
        mode=mode,
        entries_total=log.count(),
        entries_affected=affected,
        conversation_entries_affected=conversation,
        code_entries_affected=code,
        target_timestamp=target.timestamp,
        summary=f"{verb}: {affected} {noun} affected ({conversation} conversation, {code} code/state).",
        target_entry_type=target.entry_type,
    )


def _rebuild(log: EntryLog, position: int, *, with_now: bool) -> tuple[ProcessState, ProcessState]:
    """The state just before `position`, and (if asked) after the last entry, in one pass."""
    state = ProcessState()
    before: ProcessState | None = None
    for at, entry_type, data in log.scan(STATE_TYPES, 0, log.end if with_now else position):
        if before is None and at >= position:
            before = state.copy()
        state.apply(entry_type, data)
    if before is None:
        before = state.copy()
    return before, state


def _summary_note(log: EntryLog, position: int) -> str:
    counts = ", ".join(f"{count} {name}" for name, count in sorted(log.type_counts(position).items()))
    first = log.entry(position).timestamp.isoformat()
    last = log.last_from(position)
    assert last is not None  # the target itself is there
    return (
        f"Skipped interval {first} -> {last.timestamp.isoformat()} containing {counts}. "
        "State and conversation were preserved as-is."
    )
