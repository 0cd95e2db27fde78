"""`ProcessRecorder`: what a long-lived agent process writes to its journal, and its invocations.

A process (woken by cron ticks and webhooks) keeps state across invocations: context key-values, a
lifecycle state, a conversation and an invocation count. The recorder holds that state, writes each
change to the journal at the chosen level, and runs the agent of each invocation with
`devtool.core.run_with`: the `invocation_start` and `invocation_result` entries carry the run's
`trace_id` (and the run's metadata names the process and the invocation), so the DevTool can open
the agent trace from the process timeline, and the process timeline from the trace.

What each level writes (the published library's split):
- `none`: nothing.
- `checkpoint`: `state_transition`, `context_update`, `error`, `invocation_result`, a checkpoint after
  each invocation, and a rewind with its checkpoint.
- `full`: all of that, and `trigger_event`, `invocation_start`, `user_prompt`, `assistant_message`,
  `conversation_turn`, `tool_call` and `tool_result`.

The recorder keeps its state at every level, so a checkpoint holds the conversation even when its
messages were not journaled one by one.

A rewind applied for real (`apply_rewind`, or `ProcessRecorder.rewind`) appends the `rewind` entry and
then a checkpoint of the rewound state: `ReplayEngine.recover` does not apply rewind entries (the
published semantics, kept so journals move between the libraries), so without that checkpoint a
recovery would bring back what was rewound.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from devtool.core import current_trace_id, run_with
from devtool.core.events import Sink
from devtool.core.snapshot import AgentSnapshot
from devtool.journal.entries import JournalEntry, JournalLevel
from devtool.journal.protocol import JournalProvider
from devtool.journal.replay import ReplayEngine
from devtool.journal.rewind import RewindEngine, RewindMode, RewindResult

_ERROR_TEXT = 2000


@dataclass(frozen=True, slots=True)
class Invocation:
    """One finished invocation: its number in the process, the agent run's trace id, the agent's result."""

    number: int
    trace_id: str
    result: Any


async def apply_rewind(
    journal: JournalProvider,
    *,
    process_id: str,
    target_entry_id: str,
    mode: RewindMode | str,
    actor: str = "system",
    state: dict[str, Any] | None = None,
) -> RewindResult:
    """Rewind a process for real: record the rewind, then checkpoint the rewound state right after it.

    The checkpoint is `state` (by default the process's last checkpoint, so what a rewind does not
    take back, such as a mission or budget counters, is kept) with the rewound context, lifecycle
    state and conversation. `CANCEL` writes nothing.
    """
    mode = RewindMode(mode)
    engine = RewindEngine(journal)
    if mode is RewindMode.CANCEL:
        return await engine.apply(process_id=process_id, target_entry_id=target_entry_id, mode=mode, record=False)
    base = state if state is not None else (await journal.last_checkpoint(process_id) or {})
    result = await engine.apply(process_id=process_id, target_entry_id=target_entry_id, mode=mode, actor=actor)
    rewound = {
        **base,
        "context_state": result.context_state,
        "lifecycle_state": result.lifecycle_state,
        "conversation": result.conversation,
    }
    await journal.checkpoint(process_id, rewound)
    return result


class ProcessRecorder:
    """Records one process into a journal; one invocation at a time."""

    def __init__(
        self, journal: JournalProvider, process_id: str, *, level: JournalLevel | str = JournalLevel.FULL
    ) -> None:
        self.journal = journal
        self.process_id = process_id
        self.level = JournalLevel(level)
        self.context_state: dict[str, Any] = {}
        self.lifecycle_state = "created"
        self.conversation: list[dict[str, Any]] = []
        self.invocation_count = 0

    @classmethod
    async def resume(
        cls, journal: JournalProvider, process_id: str, *, level: JournalLevel | str = JournalLevel.FULL
    ) -> ProcessRecorder:
        """A recorder that carries on from what the journal holds (after a restart or a crash)."""
        recovered = await ReplayEngine(journal).recover(process_id)
        recorder = cls(journal, process_id, level=level)
        recorder.context_state = dict(recovered["context_state"])
        recorder.lifecycle_state = recovered["lifecycle_state"]
        checkpoint: dict[str, Any] = recovered["checkpoint"]
        conversation = checkpoint.get("conversation")
        if isinstance(conversation, list):
            recorder.conversation = [dict(message) for message in conversation if isinstance(message, dict)]
        count = checkpoint.get("invocation_count")
        if isinstance(count, int) and not isinstance(count, bool):
            recorder.invocation_count = count
        return recorder

    def state(self) -> dict[str, Any]:
        """The state a checkpoint holds (a copy)."""
        return {
            "context_state": dict(self.context_state),
            "lifecycle_state": self.lifecycle_state,
            "invocation_count": self.invocation_count,
            "conversation": [dict(message) for message in self.conversation],
        }

    # -- what happens to a process -------------------------------------------------------------

    async def transition(self, to_state: str, *, reason: str | None = None) -> None:
        """The lifecycle state changes (`created` → `running` → `suspended` ...)."""
        from_state, self.lifecycle_state = self.lifecycle_state, to_state
        await self._record(
            JournalLevel.CHECKPOINT,
            "state_transition",
            {"from_state": from_state, "to_state": to_state, "reason": reason},
        )

    async def trigger(self, trigger_type: str, payload: Any = None, *, trigger_id: str | None = None) -> None:
        """Something woke the process: a cron tick, a webhook, a message."""
        data = {"trigger_type": trigger_type, "trigger_id": trigger_id, "payload": payload}
        await self._record(JournalLevel.FULL, "trigger_event", data)

    async def set_context(self, key: str, value: Any) -> None:
        """One key of the process's state changes."""
        self.context_state[key] = value
        await self._record(JournalLevel.CHECKPOINT, "context_update", {"key": key, "value": value})

    async def user_prompt(self, text: str) -> None:
        """A user message enters the conversation."""
        self.conversation.append({"role": "user", "content": text})
        await self._record(JournalLevel.FULL, "user_prompt", {"prompt": text})

    async def assistant_message(self, text: str) -> None:
        """The agent says something."""
        self.conversation.append({"role": "assistant", "content": text})
        await self._record(JournalLevel.FULL, "assistant_message", {"content": text})

    async def conversation_turn(self, role: str, content: Any) -> None:
        """Any other message (a system note, a tool message)."""
        self.conversation.append({"role": role, "content": content})
        await self._record(JournalLevel.FULL, "conversation_turn", {"role": role, "content": content})

    async def tool_call(self, tool: str, args: dict[str, Any]) -> None:
        """The process calls a tool (a side effect that a replay never repeats)."""
        await self._record(JournalLevel.FULL, "tool_call", {"tool": tool, "args": args})

    async def tool_result(self, tool: str, result: Any) -> None:
        """What a tool returned."""
        await self._record(JournalLevel.FULL, "tool_result", {"tool": tool, "result": result})

    async def error(self, message: str, **details: Any) -> None:
        """Something went wrong outside an invocation."""
        await self._record(JournalLevel.CHECKPOINT, "error", {"error": message[:_ERROR_TEXT], **details})

    async def checkpoint(self) -> None:
        """Store the whole state, the baseline a recovery starts from."""
        if self.level is not JournalLevel.NONE:
            await self.journal.checkpoint(self.process_id, self.state())

    # -- invocations and rewinds ---------------------------------------------------------------

    async def invoke(
        self,
        fn: Callable[[], Any],
        *,
        snapshot: AgentSnapshot | dict[str, Any] | None = None,
        enable_snapshot: bool | None = None,
        sinks: Iterable[Sink] = (),
        metadata: dict[str, Any] | None = None,
    ) -> Invocation:
        """Run `fn` (an agent call) as one invocation under `run_with`; checkpoint after it, even if it fails."""
        self.invocation_count += 1
        number = self.invocation_count
        trace_ids: list[str] = []

        async def invocation() -> Any:
            trace_id = current_trace_id()
            trace_ids.append(trace_id)
            await self._record(JournalLevel.FULL, "invocation_start", {"invocation": number, "trace_id": trace_id})
            result = fn()
            return await result if inspect.isawaitable(result) else result

        started = time.perf_counter()
        run_metadata = {"process_id": self.process_id, "invocation": number, **(metadata or {})}
        try:
            result = await run_with(
                invocation, snapshot=snapshot, enable_snapshot=enable_snapshot, sinks=sinks, metadata=run_metadata
            )
        except BaseException as exc:
            trace_id = trace_ids[0] if trace_ids else None
            failure = {"error_type": type(exc).__name__, "error": str(exc)[:_ERROR_TEXT]}
            await self._record(
                JournalLevel.CHECKPOINT, "error", {"invocation": number, "trace_id": trace_id, **failure}
            )
            await self._finish(number, trace_id, started, {"success": False, **failure})
            raise
        await self._finish(number, trace_ids[0], started, {"success": True, "output": result})
        return Invocation(number, trace_ids[0], result)

    async def rewind(
        self, target_entry_id: str, mode: RewindMode | str = RewindMode.BOTH, *, actor: str = "system"
    ) -> RewindResult:
        """Rewind the process to just before an entry: record it, adopt the rebuilt state, checkpoint it."""
        mode = RewindMode(mode)
        if mode is RewindMode.CANCEL or self.level is JournalLevel.NONE:
            return await RewindEngine(self.journal).apply(
                process_id=self.process_id, target_entry_id=target_entry_id, mode=mode, record=False
            )
        result = await apply_rewind(
            self.journal,
            process_id=self.process_id,
            target_entry_id=target_entry_id,
            mode=mode,
            actor=actor,
            state=self.state(),
        )
        self.context_state = dict(result.context_state)
        self.lifecycle_state = result.lifecycle_state
        self.conversation = [dict(message) for message in result.conversation]
        return result

    async def _finish(self, number: int, trace_id: str | None, started: float, outcome: dict[str, Any]) -> None:
        duration_ms = round((time.perf_counter() - started) * 1000, 1)
        data = {"invocation": number, "trace_id": trace_id, "duration_ms": duration_ms, **outcome}
        await self._record(JournalLevel.CHECKPOINT, "invocation_result", data)
        await self.checkpoint()

    async def _record(self, needs: JournalLevel, entry_type: str, data: dict[str, Any]) -> None:
        if self.level is JournalLevel.NONE or (needs is JournalLevel.FULL and self.level is not JournalLevel.FULL):
            return
        await self.journal.append(JournalEntry(process_id=self.process_id, entry_type=entry_type, data=data))
