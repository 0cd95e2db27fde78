"""Forks: a new snapshot made from another by editing frames' memory or dropping journal entries.

Editing memory asks "what if the agent had known this"; dropping an entry makes that call run live
again on a replay. The original is never changed: the fork is a new document (so it has its own
id), records its parent in the store, and says in `metadata.fork` what was changed, so a teammate
who only has the JSON file can tell.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

KINDS = ("prompt", "tool")


class ForkError(ValueError):
    """An edit that cannot make a fork; the message names the frame and what is wrong."""


@dataclass(frozen=True)
class Edits:
    """What a fork changes: new memory by callId, and journal entries to drop (callId, kind, hash)."""

    memory: dict[str, dict[str, Any]] = field(default_factory=dict)
    drop: frozenset[tuple[str, str, str]] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.memory or self.drop)


def parse_memory(text: str, call_id: str) -> dict[str, Any]:
    """A frame's memory from the editor's text: a JSON object, else `ForkError` saying where it breaks."""

    def refuse_constant(name: str) -> Any:
        raise ForkError(f"memory of {call_id}: {name} is not JSON")

    try:
        value = json.loads(text, parse_constant=refuse_constant)
    except json.JSONDecodeError as exc:
        raise ForkError(f"memory of {call_id}: line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    if not isinstance(value, dict):
        raise ForkError(f"memory of {call_id}: must be a JSON object ({{...}}), not {type(value).__name__}")
    return value


def fork(snapshot: dict[str, Any], edits: Edits, *, parent_id: str) -> dict[str, Any]:
    """A copy of `snapshot` with `edits` applied and recorded; `ForkError` for an edit that names a
    frame or entry the snapshot does not have, or for no change at all."""
    if not edits:
        raise ForkError("nothing to fork: edit a frame's memory or drop a journal entry first")
    forked = copy.deepcopy(snapshot)
    frames = _frames_by_call_id(forked)
    changed: list[str] = []
    for call_id, memory in edits.memory.items():
        frame = _frame(frames, call_id)
        if frame["memory"] != memory:
            frame["memory"] = memory
            changed.append(call_id)
    dropped = []
    for call_id, kind, digest in sorted(edits.drop):
        journal = _frame(frames, call_id)["journal"]
        if kind not in KINDS or digest not in journal.get(kind, {}):
            raise ForkError(f"{call_id} has no {kind} journal entry {digest[:16]}… to drop")
        del journal[kind][digest]
        dropped.append({"callId": call_id, "kind": kind, "contentHash": digest})
    if not changed and not dropped:
        raise ForkError("nothing to fork: the memory is unchanged and no journal entry is dropped")
    metadata = dict(forked.get("metadata") or {})
    metadata["fork"] = {"parent": parent_id, "memory": changed, "dropped": dropped}
    forked["metadata"] = metadata
    return forked


def _frames_by_call_id(snapshot: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every frame of `snapshot`, the root and all below it, by callId."""
    frames: dict[str, dict[str, Any]] = {}
    stack = [snapshot["root"]]
    while stack:
        frame = stack.pop()
        frames[frame["callId"]] = frame
        stack.extend(frame.get("children", {}).values())
    return frames


def _frame(frames: dict[str, dict[str, Any]], call_id: str) -> dict[str, Any]:
    frame = frames.get(call_id)
    if frame is None:
        raise ForkError(f"the snapshot has no frame {call_id!r}")
    return frame
