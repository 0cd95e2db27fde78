"""Which edits of a fork did not take effect in its replay, and where: what the compare page names.

A fork edits frames' memory and calls' outputs or input messages (`devtool.core.counterfactual`). An
edit can change nothing: the agent sets the edited memory key itself when it starts (so the edited
value is overwritten before anything reads it), or the replay takes another path and never makes the
edited call. Both look like "0 frames differ" on the compare page; this module says why instead.

What it can see is the replay's trace: an edited memory key is overwritten when the frame's first
generation ends (or, for the run's root, the run ends) with another value for it; a call is reached
when an event of the replay carries its call path. An empty "only differences" view gets a reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from devtool.store import NotFoundError, Store, get_snapshot
from devtool.store.queries.events import run_events

MEMORY_EVENTS = ("generation:end", "runWith:end")
CALL_EVENTS = ("turn:end", "tools:execute:end")


@dataclass(frozen=True)
class Effect:
    """An edit that did not take effect: what it was (`kind`: "memory" or "call"), the frame or call it
    named, what happened instead (`words`), and the replay's span where it shows (None: nowhere)."""

    kind: str
    call_id: str
    words: str
    span_id: str | None = None


@dataclass(frozen=True)
class ForkEffects:
    """A replay's fork edits that did not take effect, and how many edits the fork made."""

    snapshot_id: str
    edits: int
    lost: list[Effect]


def fork_effects(store: Store, snapshot_id: str, replay_trace: str) -> ForkEffects | None:
    """The edits of the fork `snapshot_id` that replay `replay_trace` did not act on; None when the
    snapshot is no fork or is not stored."""
    try:
        stored = get_snapshot(store, snapshot_id)
    except NotFoundError:
        return None
    snapshot: dict[str, Any] = dict(stored.snapshot)
    fork = (snapshot.get("metadata") or {}).get("fork")
    if not isinstance(fork, dict):
        return None
    memory_edits = _memory_edits(store, snapshot, fork, stored.info.parent_id)
    calls: dict[str, Any] = fork["calls"] if isinstance(fork.get("calls"), dict) else {}
    events = run_events(store, replay_trace, types=(*MEMORY_EVENTS, *CALL_EVENTS, "turn:start"))
    lost = [*_overwritten(memory_edits, events), *_unreached(calls, events)]
    edits = sum(len(keys) for keys in memory_edits.values()) + len(calls)
    return ForkEffects(snapshot_id, edits, lost)


def empty_reason(effects: ForkEffects | None, live: int) -> str:
    """Why a replay's comparison has no frame that differs, in words (how many calls the snapshot served
    the page says once, elsewhere: `templates/_replay_saving.html`)."""
    if effects is not None and effects.lost and len(effects.lost) >= effects.edits:
        return "no edit of the fork took effect (see above), so the replay did what the original did"
    if effects is not None and effects.edits:
        return (
            f"the fork's edits took effect, but every frame ended with the same status, output and memory: "
            f"the replay ran {live} call{'s' if live != 1 else ''} live and they came to the same results"
        )
    if live == 0:
        return "the replay served every call from the snapshot, so it could only do what the original did"
    return f"the {live} call{'s' if live != 1 else ''} the replay ran live returned what the original's did"


def _memory_edits(
    store: Store, snapshot: dict[str, Any], fork: dict[str, Any], parent_id: str | None
) -> dict[str, dict[str, Any]]:
    """Per edited frame, the memory keys the fork changed and their edited values."""
    call_ids = [c for c in fork.get("memory") or [] if isinstance(c, str)]
    if not call_ids:
        return {}
    frames = _frames(snapshot)
    before: dict[str, dict[str, Any]] = {}
    if parent_id is not None:
        try:
            before = _frames(dict(get_snapshot(store, parent_id).snapshot))
        except NotFoundError:
            before = {}
    edits: dict[str, dict[str, Any]] = {}
    for call_id in call_ids:
        memory = (frames.get(call_id) or {}).get("memory") or {}
        old = (before.get(call_id) or {}).get("memory") or {}
        changed = {key: value for key, value in memory.items() if key not in old or old[key] != value}
        if changed:
            edits[call_id] = changed
    return edits


def _overwritten(edits: dict[str, dict[str, Any]], events: list[dict[str, Any]]) -> list[Effect]:
    """Edited keys whose frame's first memory in the replay holds another value."""
    first: dict[str, dict[str, Any]] = {}
    for event in events:
        call_id = event.get("callId")
        if event["type"] in MEMORY_EVENTS and isinstance(call_id, str) and call_id in edits and call_id not in first:
            first[call_id] = event
    lost = []
    for call_id, keys in edits.items():
        found = first.get(call_id)
        if found is None:
            lost.append(
                Effect("memory", call_id, "its agent never ran in the replay, so its edited memory was never read")
            )
            continue
        event = found
        memory: dict[str, Any] = event["memory"] if isinstance(event.get("memory"), dict) else {}
        where = "the run ended" if event["type"] == "runWith:end" else "its first generation ended"
        for key, value in keys.items():
            if key in memory and memory[key] != value:
                words = (
                    f"memory key {key!r} was overwritten: by the time {where} it held {_short(memory[key])}, "
                    f"not the edited {_short(value)} (the agent sets it itself, so whatever read it saw its own value)"
                )
                lost.append(Effect("memory", call_id, words, _span(event)))
    return lost


def _unreached(calls: dict[str, Any], events: list[dict[str, Any]]) -> list[Effect]:
    """Edited calls no event of the replay names, with what their frame did instead; and edited messages
    a reached turn did not send."""
    reached: set[str] = set()
    by_frame: dict[str, list[str]] = {}
    for event in events:
        for call_id in _call_ids(event):
            if call_id not in reached:
                reached.add(call_id)
                by_frame.setdefault(call_id.rpartition("/")[0], []).append(call_id)
    frames = {event.get("callId") for event in events if event["type"] == "generation:end"} | {"root"}
    sent = {e.get("callId"): e.get("messages") for e in events if e["type"] == "turn:start"}
    lost = []
    for call_id, edit in calls.items():
        if call_id in reached:
            if isinstance(edit, dict) and "messages" in edit and sent.get(call_id) != edit["messages"]:
                words = (
                    "the edited messages were not sent: the turn sent others (a request of an API the "
                    "instrumentation cannot rewrite sends its own; edit its answer, or ask again in the playground)"
                )
                lost.append(Effect("call", call_id, words))
            continue
        frame = call_id.rpartition("/")[0]
        made = by_frame.get(frame, [])
        if made:
            words = f"the edited call was never reached: its frame made {len(made)} call(s), the last {made[-1]}"
        elif frame in frames:
            words = "the edited call was never reached: its frame ran but made no model or tool call"
        else:
            words = f"the edited call was never reached: its agent {frame} never ran in the replay"
        lost.append(Effect("call", call_id, words))
    return lost


def _call_ids(event: dict[str, Any]) -> list[str]:
    if event["type"] in ("turn:end", "turn:start"):
        call_id = event.get("callId")
        return [call_id] if isinstance(call_id, str) else []
    if event["type"] == "tools:execute:end":
        results: list[Any] = event["toolResults"] if isinstance(event.get("toolResults"), list) else []
        found = [r.get("callPath", r.get("callId")) for r in results if isinstance(r, dict)]
        return [c for c in found if isinstance(c, str)]
    return []


def _frames(snapshot: dict[str, Any]) -> dict[str, dict[str, Any]]:
    frames: dict[str, dict[str, Any]] = {}
    stack = [snapshot.get("root") or {}]
    while stack:
        frame = stack.pop()
        if isinstance(frame.get("callId"), str):
            frames[frame["callId"]] = frame
        stack.extend(v for v in (frame.get("children") or {}).values() if isinstance(v, dict))
    return frames


def _span(event: dict[str, Any]) -> str | None:
    trace: dict[str, Any] = event["trace"] if isinstance(event.get("trace"), dict) else {}
    span = trace.get("spanId")
    return span if isinstance(span, str) else None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


@dataclass(frozen=True)
class ForkReport:
    """What the compare page says of replay `replay_trace`'s fork: its edits that did not take effect
    (None: the snapshot replayed is no fork), how many frames differ, and why nothing does, should nothing."""

    replay_trace: str
    effects: ForkEffects | None
    differences: int
    empty: str


def fork_report(store: Store, snapshot_id: Any, replay_trace: str, *, differences: int, live: int) -> ForkReport:
    """The report for replay `replay_trace` of snapshot `snapshot_id` (None or not a string: no snapshot
    known), given how many frames differ, and how many of its calls ran live."""
    effects = fork_effects(store, snapshot_id, replay_trace) if isinstance(snapshot_id, str) else None
    return ForkReport(replay_trace, effects, differences, empty_reason(effects, live))
