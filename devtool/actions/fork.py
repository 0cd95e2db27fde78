"""Forks: a new snapshot made from another by editing frames' memory, calls' outputs or a turn's input
messages, or dropping journal entries.

Editing memory asks "what if the agent had known this"; editing what a call returned, "what if the tool
had said that" (`devtool.core.counterfactual.fork_snapshot` does both, for the web as for Python);
dropping an entry makes that call run live again on a replay. The original is never changed: the fork
is a new document (so it has its own id), records its parent in the store, and says in `metadata.fork`
what was changed, so a teammate who only has the JSON file can tell.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

from devtool.core.counterfactual import ForkError, fork_snapshot

KINDS = ("prompt", "tool")


__all__ = ["Edits", "ForkError", "fork", "parse_json", "parse_memory"]


@dataclass(frozen=True)
class Edits:
    """What a fork changes: new memory by frame callId, calls' outputs and turns' input messages by call
    path, journal entries given a new output and journal entries to drop (frame callId, kind, hash)."""

    memory: dict[str, dict[str, Any]] = field(default_factory=dict)
    drop: frozenset[tuple[str, str, str]] = frozenset()
    outputs: dict[str, Any] = field(default_factory=dict)
    messages: dict[str, Any] = field(default_factory=dict)
    # Journal entries given a new output (frame callId, kind, hash): the snapshot page edits them in place.
    entries: dict[tuple[str, str, str], Any] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.memory or self.drop or self.outputs or self.messages or self.entries)


def parse_json(text: str, where: str) -> Any:
    """A JSON value from an editor's text, else `ForkError` saying where it breaks."""

    def refuse_constant(name: str) -> Any:
        raise ForkError(f"{where}: {name} is not JSON")

    try:
        return json.loads(text, parse_constant=refuse_constant)
    except json.JSONDecodeError as exc:
        raise ForkError(f"{where}: line {exc.lineno}, column {exc.colno}: {exc.msg}") from None


def parse_memory(text: str, call_id: str) -> dict[str, Any]:
    """A frame's memory from the editor's text: a JSON object, else `ForkError` saying where it breaks."""
    value = parse_json(text, f"memory of {call_id}")
    if not isinstance(value, dict):
        raise ForkError(f"memory of {call_id}: must be a JSON object ({{...}}), not {type(value).__name__}")
    return value


def fork(snapshot: dict[str, Any], edits: Edits, *, parent_id: str) -> dict[str, Any]:
    """A copy of `snapshot` with `edits` applied and recorded; `ForkError` for an edit that names a
    frame, call or entry the snapshot does not have, or for no change at all."""
    if not edits:
        raise ForkError("nothing to fork: edit a frame's memory or a call's output, or drop a journal entry first")
    pruned = copy.deepcopy(snapshot)
    frames = _frames_by_call_id(pruned)
    dropped = []
    for call_id, kind, digest in sorted(edits.drop):
        journal = _frame(frames, call_id)["journal"]
        if kind not in KINDS or digest not in journal.get(kind, {}):
            raise ForkError(f"{call_id} has no {kind} journal entry {digest[:16]}… to drop")
        del journal[kind][digest]
        dropped.append({"callId": call_id, "kind": kind, "contentHash": digest})
    edited = _edit_entries(frames, edits.entries)
    memory = {
        call_id: values for call_id, values in edits.memory.items() if _frame(frames, call_id)["memory"] != values
    }
    if not (memory or edits.outputs or edits.messages):
        if not dropped and not edited:
            raise ForkError("nothing to fork: no memory or output is changed and no journal entry is dropped")
        metadata = dict(pruned.get("metadata") or {})
        metadata["fork"] = {"parent": parent_id, "memory": [], "dropped": dropped}
        pruned["metadata"] = metadata
    else:
        pruned = dict(
            fork_snapshot(pruned, outputs=edits.outputs, messages=edits.messages, memory=memory, parent=parent_id)
        )
        pruned["metadata"]["fork"]["dropped"] = dropped
    if edited:
        pruned["metadata"]["fork"]["entries"] = edited
    return pruned


def _edit_entries(frames: dict[str, dict[str, Any]], entries: dict[tuple[str, str, str], Any]) -> list[Any]:
    """Give journal entries their new outputs (a tombstone edited becomes an entry a replay serves);
    the entries changed, as `metadata.fork.entries` names them."""
    edited = []
    for (call_id, kind, digest), output in sorted(entries.items(), key=lambda item: item[0]):
        journal = _frame(frames, call_id)["journal"]
        entry = journal.get(kind, {}).get(digest) if kind in KINDS else None
        if entry is None:
            raise ForkError(f"{call_id} has no {kind} journal entry {digest[:16]}… to edit")
        if entry.get("output") == output:
            continue
        journal[kind][digest] = {"output": output, "contentHash": digest}
        edited.append({"callId": call_id, "kind": kind, "contentHash": digest})
    return edited


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
