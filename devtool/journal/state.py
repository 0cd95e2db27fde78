"""Process state rebuilt from entries: context key-values, lifecycle state and conversation.

The rules are the published rewind engine's, so a journal gives the same state in both libraries:
- `checkpoint` overwrites (its data is `{"state": {...}}`, or the state itself in older lines):
  `context_state` if it is an object, `lifecycle_state` if it is a string, `conversation` if it is a
  list (keeping its object messages);
- `state_transition` sets the lifecycle state to a string `to_state` (an empty one too);
- `context_update` sets `key` to `value` (a missing value is null);
- `user_prompt` (`prompt`, else `content`), `assistant_message` (`content`) and `conversation_turn`
  (`role`, default user, and `content`) add a message;
- nothing else changes state: side effects are never re-executed.
One stricter rule: a `context_update` whose key is not a string changes nothing (the published
engine stored numbers as keys and crashed on a list).
"""

from __future__ import annotations

from typing import Any

STATE_TYPES = frozenset(
    {"checkpoint", "state_transition", "context_update", "user_prompt", "assistant_message", "conversation_turn"}
)


class ProcessState:
    """A state being rebuilt, entry by entry."""

    __slots__ = ("context_state", "conversation", "lifecycle_state")

    def __init__(self) -> None:
        self.context_state: dict[str, Any] = {}
        self.lifecycle_state = "created"
        self.conversation: list[dict[str, Any]] = []

    def copy(self) -> ProcessState:
        """A copy that later entries do not change."""
        copied = ProcessState()
        copied.context_state = dict(self.context_state)
        copied.lifecycle_state = self.lifecycle_state
        copied.conversation = list(self.conversation)
        return copied

    def apply(self, entry_type: str, data: dict[str, Any]) -> None:
        """Fold one entry into the state."""
        if entry_type == "context_update":
            key = data.get("key")
            if isinstance(key, str):
                self.context_state[key] = data.get("value")
        elif entry_type == "state_transition":
            to_state = data.get("to_state")
            if isinstance(to_state, str):
                self.lifecycle_state = to_state
        elif entry_type == "user_prompt":
            self.conversation.append({"role": "user", "content": data.get("prompt") or data.get("content") or ""})
        elif entry_type == "assistant_message":
            self.conversation.append({"role": "assistant", "content": data.get("content") or ""})
        elif entry_type == "conversation_turn":
            self.conversation.append({"role": data.get("role", "user"), "content": data.get("content", "")})
        elif entry_type == "checkpoint":
            self._restore(data)

    def _restore(self, data: dict[str, Any]) -> None:
        state = data.get("state")
        snapshot = state if isinstance(state, dict) else data
        context = snapshot.get("context_state")
        if isinstance(context, dict):
            self.context_state = dict(context)
        lifecycle = snapshot.get("lifecycle_state")
        if isinstance(lifecycle, str):
            self.lifecycle_state = lifecycle
        conversation = snapshot.get("conversation")
        if isinstance(conversation, list):
            self.conversation = [dict(message) for message in conversation if isinstance(message, dict)]
