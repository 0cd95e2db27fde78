"""The AgentSnapshot document: its shape, and the check `run_with` runs before replaying one.

The shape is the time-travel documentation's, so snapshots move between this library and the
TypeScript one. A snapshot from `dump_snapshot` or our `restore_snapshot` is rooted at the run's
own frame (`callId` "root"); the TypeScript library's restore roots it at the first agent frame
instead, so `normalize` wraps such a frame in a root before a replay.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

from devtool.core.budget import BudgetState, empty_budget_state
from devtool.core.errors import SnapshotError
from devtool.core.events import ErrorInfo
from devtool.core.jsonvalue import JSON

SNAPSHOT_VERSION = 1
ROOT_CALL_ID = "root"
STATUSES = ("running", "completed", "failed")

Status = Literal["running", "completed", "failed"]


class JournalRecord(TypedDict):
    """One recorded call: its output, or a tombstone (`output` None, `error` set) never replayed."""

    output: JSON
    contentHash: str
    error: NotRequired[JSON]


class FrameJournal(TypedDict):
    prompt: dict[str, JournalRecord]
    tool: dict[str, JournalRecord]


class FrameState(TypedDict):
    status: Status
    output: NotRequired[JSON]
    error: NotRequired[ErrorInfo | JSON]


class FrameSnapshot(TypedDict):
    callId: str
    agentId: str
    memory: dict[str, JSON]
    journal: FrameJournal
    children: dict[str, FrameSnapshot]
    state: FrameState
    budgetState: NotRequired[BudgetState]


class Provenance(TypedDict):
    traceId: str
    spanId: NotRequired[str]
    anchor: NotRequired[Literal["before", "after"]]
    source: NotRequired[Literal["dump", "restore"]]


class AgentSnapshot(TypedDict):
    processId: str
    timestamp: float
    root: FrameSnapshot
    provenance: Provenance
    version: int
    metadata: NotRequired[dict[str, JSON]]


def validate(value: Any) -> AgentSnapshot:
    """`value` if it is a well-formed snapshot, else `SnapshotError` naming the first bad field."""
    _expect(isinstance(value, dict), "snapshot", "must be an object", value)
    _expect(
        value.get("version") == SNAPSHOT_VERSION,
        "snapshot.version",
        f"must be {SNAPSHOT_VERSION}",
        value.get("version"),
    )
    _field(value, "snapshot", "processId", str)
    _field(value, "snapshot", "timestamp", (int, float))
    provenance = _field(value, "snapshot", "provenance", dict)
    _field(provenance, "snapshot.provenance", "traceId", str)
    if "anchor" in provenance:
        _expect(
            provenance["anchor"] in ("before", "after"),
            "snapshot.provenance.anchor",
            "must be before or after",
            provenance["anchor"],
        )
    if "metadata" in value:
        _field(value, "snapshot", "metadata", dict)
    _validate_frame(_field(value, "snapshot", "root", dict), "snapshot.root")
    return value  # type: ignore[no-any-return]


def normalize(snapshot: AgentSnapshot) -> AgentSnapshot:
    """A snapshot rooted at the run's frame; a TS-style snapshot rooted at an agent is wrapped."""
    root = snapshot["root"]
    if root["callId"] == ROOT_CALL_ID:
        return snapshot
    wrapper: FrameSnapshot = {
        "callId": ROOT_CALL_ID,
        "agentId": "",
        "memory": {},
        "journal": {"prompt": {}, "tool": {}},
        "children": {root["callId"]: root},
        "state": {"status": root["state"]["status"]},
        "budgetState": {
            "own": empty_budget_state()["own"],
            "aggregate": root.get("budgetState", empty_budget_state())["aggregate"],
        },
    }
    return {**snapshot, "root": wrapper}


def with_budget_states(frame: dict[str, Any]) -> dict[str, Any]:
    """`frame` and its descendants, each with a `budgetState` (an empty one where it has none: a
    snapshot stored before frames carried one). The TypeScript library refuses a frame without."""
    children = {call_id: with_budget_states(child) for call_id, child in frame.get("children", {}).items()}
    filled = {**frame, "children": children}
    if "budgetState" not in filled:
        filled["budgetState"] = empty_budget_state()
    return filled


def _validate_frame(frame: dict[str, Any], where: str) -> None:
    _field(frame, where, "callId", str)
    _field(frame, where, "agentId", str)
    _field(frame, where, "memory", dict)
    journal = _field(frame, where, "journal", dict)
    for kind in ("prompt", "tool"):
        entries = _field(journal, f"{where}.journal", kind, dict)
        for key, entry in entries.items():
            at = f"{where}.journal.{kind}[{key!r}]"
            _expect(isinstance(entry, dict), at, "must be an object", entry)
            _expect("output" in entry, at, "has no output", None)
            _field(entry, at, "contentHash", str)
    state = _field(frame, where, "state", dict)
    _expect(
        state.get("status") in STATUSES,
        f"{where}.state.status",
        f"must be one of {', '.join(STATUSES)}",
        state.get("status"),
    )
    if "budgetState" in frame:
        _field(frame, where, "budgetState", dict)
    for key, child in _field(frame, where, "children", dict).items():
        at = f"{where}.children[{key!r}]"
        _expect(isinstance(child, dict), at, "must be an object", child)
        _expect(child.get("callId") == key, f"{at}.callId", f"must equal its key {key!r}", child.get("callId"))
        _validate_frame(child, at)


def _field(container: dict[str, Any], where: str, name: str, kind: type | tuple[type, ...]) -> Any:
    value = container.get(name)
    if name not in container:
        raise SnapshotError(f"{where}.{name}: missing")
    # bool is an int to isinstance, but never a number in a snapshot
    ok = isinstance(value, kind) and not isinstance(value, bool)
    _expect(ok, f"{where}.{name}", f"must be {_kind_name(kind)}", value)
    return value


def _expect(ok: bool, where: str, rule: str, got: Any) -> None:
    if not ok:
        shown = repr(got)
        raise SnapshotError(f"{where}: {rule}, got {shown if len(shown) <= 80 else shown[:79] + '…'}")


def _kind_name(kind: type | tuple[type, ...]) -> str:
    names = {dict: "an object", str: "a string", int: "a number", float: "a number", list: "an array"}
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(dict.fromkeys(names.get(k, k.__name__) for k in kinds))
