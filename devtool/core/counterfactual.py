"""Counterfactual forks: "what if this call had returned that", as a snapshot a replay continues from.

`fork_snapshot(snapshot, outputs=..., messages=..., memory=..., drop=...)` makes a new snapshot. A
snapshot's journal is keyed by the content hash of each call's input, not by the call, so an edit of
one call is kept by its call path, in `metadata.fork.calls` (`{callId: {"output": value}}`,
`{"messages": [...]}` or `{"live": true}`), and the runtime reads it when a replay starts (`edits_of`):

- an edited **output** is what that call returns on the replay, whatever its input hashes to (a tool
  call's output; a turn's answer: its text, or a whole assistant message; for an SDK-recorded turn,
  text, from which `devtool.instrument` writes a provider answer of the request's API and form, or a
  whole `{"api", "status", "body"|"sse"}` entry);
- edited input **messages** (a turn's, the system or user message) are what that turn sends: a
  `prompt()` turn's later turns go on from them; an SDK-recorded turn's request carries them, written
  into its API's body by `devtool.instrument.edited_input`; so that turn and every later one whose
  input changed miss the journal and run live, and the rest is served;
- a **dropped** call runs live even though the journal has its answer.

Memory edits change a frame's memory as before. The original snapshot is never changed. The
TypeScript library ignores `metadata`, so a fork replayed there replays only its memory edits.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from devtool.core.errors import SnapshotError
from devtool.core.jsonvalue import JSON, NotJSONError, json_copy
from devtool.core.snapshot import AgentSnapshot, FrameSnapshot, normalize, validate

EDIT_KINDS = ("output", "messages", "live")


class ForkError(ValueError):
    """An edit that cannot make a fork; the message names the call or frame and what is wrong."""


def fork_snapshot(
    snapshot: AgentSnapshot | dict[str, Any],
    *,
    outputs: Mapping[str, Any] | None = None,
    messages: Mapping[str, Any] | None = None,
    memory: Mapping[str, Mapping[str, Any]] | None = None,
    drop: Iterable[str] = (),
    parent: str | None = None,
) -> AgentSnapshot:
    """A new snapshot: `snapshot` with calls' outputs (`outputs`, by call path), turns' input messages
    (`messages`), frames' memory (`memory`, by the frame's callId) edited, and `drop`'s calls
    made to run live. `parent`, the id of the snapshot forked, goes into `metadata.fork`.

    `ForkError` for a value that is not JSON, a memory edit of a frame the snapshot does not have, a
    call path that is no call (`root/agent:a:0/tool:search:1` is one), or no change at all."""
    try:
        forked: dict[str, Any] = copy.deepcopy(dict(normalize(validate(snapshot))))
    except SnapshotError as exc:
        raise ForkError(f"not a snapshot: {exc}") from None
    metadata = dict(forked.get("metadata") or {})
    previous = metadata.get("fork") if isinstance(metadata.get("fork"), dict) else {}
    calls: dict[str, dict[str, JSON]] = dict(_calls_of(previous or {}))
    for kind, edits in (("output", outputs or {}), ("messages", messages or {})):
        for call_id, value in edits.items():
            _check_call(call_id)
            if kind == "messages":
                _check_messages(call_id, value)
            calls[call_id] = {kind: _json(value, f"{kind} of {call_id}")}
    for call_id in drop:
        _check_call(call_id)
        calls[call_id] = {"live": True}
    changed = _edit_memory(forked["root"], memory or {})
    if not changed and calls == _calls_of(previous or {}):
        raise ForkError("nothing to fork: no output, message or memory is changed and no call is dropped")
    fork_record: dict[str, JSON] = {**(previous or {}), "parent": parent}
    if calls:
        fork_record["calls"] = calls  # type: ignore[assignment]
    fork_record["memory"] = sorted({*_strings(fork_record.get("memory")), *changed})  # type: ignore[assignment]
    metadata["fork"] = fork_record
    forked["metadata"] = metadata
    return forked  # type: ignore[return-value]


def edits_of(snapshot: AgentSnapshot) -> dict[str, dict[str, JSON]]:
    """The call edits a replay of `snapshot` applies, by call path (none for a snapshot that is no fork);
    `SnapshotError` for a `metadata.fork.calls` that is not edits."""
    fork = (snapshot.get("metadata") or {}).get("fork")
    if not isinstance(fork, dict) or "calls" not in fork:
        return {}
    calls = fork["calls"]
    if not isinstance(calls, dict):
        raise SnapshotError("snapshot.metadata.fork.calls: must be an object of edits by callId")
    edits: dict[str, dict[str, JSON]] = {}
    for call_id, edit in calls.items():
        if not isinstance(edit, dict) or len(edit) != 1 or next(iter(edit)) not in EDIT_KINDS:
            raise SnapshotError(
                f"snapshot.metadata.fork.calls[{call_id!r}]: must be one of "
                '{"output": ...}, {"messages": [...]}, {"live": true}'
            )
        edits[call_id] = edit
    return edits


def _calls_of(fork: Mapping[str, Any]) -> dict[str, dict[str, JSON]]:
    calls = fork.get("calls")
    return dict(calls) if isinstance(calls, dict) else {}


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _check_call(call_id: Any) -> None:
    """A call path names a turn or tool call: `<frame callId>/<turn|tool>:<configId>:<seq>`."""
    if not isinstance(call_id, str):
        raise ForkError(f"a call is named by its callId (a string), not {call_id!r}")
    last = call_id.rpartition("/")[2]
    kind, _, rest = last.partition(":")
    config, _, seq = rest.rpartition(":")
    if kind not in ("turn", "tool") or not config or not seq.isdigit() or "/" not in call_id:
        raise ForkError(
            f"{call_id!r} is no turn or tool call: a call's callId ends in /turn:<model>:<n> or /tool:<name>:<n>"
        )


def _check_messages(call_id: str, value: Any) -> None:
    if not isinstance(value, list) or not value:
        raise ForkError(f"messages of {call_id}: must be a non-empty list of messages")
    for index, message in enumerate(value):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise ForkError(f'messages of {call_id}: message {index} must be an object with a "role"')


def _json(value: Any, where: str) -> JSON:
    try:
        return json_copy(value, where)
    except NotJSONError as exc:
        raise ForkError(str(exc)) from None


def _edit_memory(root: FrameSnapshot, memory: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Apply `memory` to the frames of the tree under `root`; the callIds whose memory changed."""
    frames: dict[str, FrameSnapshot] = {}
    stack = [root]
    while stack:
        frame = stack.pop()
        frames[frame["callId"]] = frame
        stack.extend(frame.get("children", {}).values())
    changed = []
    for call_id, values in memory.items():
        found = frames.get(call_id)
        if found is None:
            raise ForkError(f"the snapshot has no frame {call_id!r}")
        frame = found
        if not isinstance(values, Mapping):
            raise ForkError(f"memory of {call_id}: must be a JSON object ({{...}}), not {type(values).__name__}")
        edited = _json(dict(values), f"memory of {call_id}")
        if frame["memory"] != edited:
            frame["memory"] = edited  # type: ignore[typeddict-item]
            changed.append(call_id)
    return changed
