"""Compare two runs: their calls aligned by callId, the first divergence, and what differs in each.

The one place that decides what "the same" means for two runs; the compare page, its JSON
(`GET /compare?a=&b=`) and `devtool diff` all ask `compare`. Calls (frames, turns, tool calls) are
aligned by callId (`call_prints`); a call differs in its `input`, `output`, `error` or `memory`, or
is in one run only (`call`). The **first divergence** is the differing call that ended first in
run A (a call ends before its parent, so of a tool whose output changed and the agent whose answer
changed with it, the tool comes first: innermost first); a call only B has is placed where B has
it. Everything after it is "downstream". Values are read again (`details`) only for the calls a
reader shows: a text that differs becomes an inline word diff, a memory differs key by key.
"""

from __future__ import annotations

import difflib
import re
from array import array
from dataclasses import dataclass, field
from typing import Any

import orjson

from devtool.actions.call_prints import CACHED, FRAME, LIVE, CallPrints, call_prints
from devtool.core.call_names import call_name
from devtool.store import Store

FIELDS = ("call", "input", "error", "output", "memory")  # in the order a call's differences are named
WORDS = re.compile(r"\s+|[^\s\w]|\w+")
DOWNSTREAM_LISTED = 20  # the differing calls after the first that the JSON answer names
MAX_DIFF_TOKENS = 6000  # past this many words a side, a text is shown whole on both sides, not diffed


@dataclass(frozen=True)
class Difference:
    """A call that differs: its callId, the fields that differ, and where each run has it."""

    call_id: str
    fields: tuple[str, ...]
    order: int  # its place among the calls (run A's, else run B's): the first divergence is the least
    a: int | None  # its index in run A's CallPrints (None: only B has it)
    b: int | None

    @property
    def name(self) -> str:
        return call_name(self.call_id)

    @property
    def field(self) -> str:
        return self.fields[0]


@dataclass(frozen=True)
class Comparison:
    """Runs `a` and `b` compared: every differing call in run order, and how many calls there are."""

    a: CallPrints
    b: CallPrints
    differences: tuple[Difference, ...]
    total: int

    @property
    def first(self) -> Difference | None:
        return self.differences[0] if self.differences else None

    @property
    def same(self) -> bool:
        return not self.differences

    def served(self, which: str) -> tuple[int, int]:
        """How many of run `which`'s model and tool calls were served from a journal, and how many ran."""
        flags = (self.a if which == "a" else self.b).served
        return flags.count(CACHED), flags.count(LIVE)


def compare(store: Store, a: str, b: str) -> Comparison:
    """Runs `a` and `b` (full trace ids) compared call by call; `NotFoundError` when either is missing."""
    left, right = call_prints(store, a), call_prints(store, b)
    if left.call_ids == right.call_ids:
        # The usual case (a replay or fork of the same program): the same calls, compared column by column.
        differing = sorted(set().union(*(_unequal(x, y) for x, y in _columns(left, right))))
        found = [Difference(left.call_ids[i], _differing(left, i, right, i), left.pos[i], i, i) for i in differing]
        return Comparison(left, right, tuple(sorted(found, key=_run_order)), len(left))
    return _merged(left, right)


def _merged(left: CallPrints, right: CallPrints) -> Comparison:
    """Runs with calls the other has not: their sorted callIds walked side by side."""
    differences: list[Difference] = []
    i = j = total = 0
    n, m = len(left), len(right)
    while i < n or j < m:
        total += 1
        key_a = left.call_ids[i] if i < n else None
        key_b = right.call_ids[j] if j < m else None
        if key_b is None or (key_a is not None and key_a < key_b):
            differences.append(Difference(left.call_ids[i], ("call",), left.pos[i], i, None))
            i += 1
        elif key_a is None or key_b < key_a:
            differences.append(Difference(key_b, ("call",), right.pos[j], None, j))
            j += 1
        else:
            fields = _differing(left, i, right, j)
            if fields:
                differences.append(Difference(key_a, fields, left.pos[i], i, j))
            i += 1
            j += 1
    return Comparison(left, right, tuple(sorted(differences, key=_run_order)), total)


def _run_order(difference: Difference) -> tuple[int, str]:
    return difference.order, difference.call_id


def _columns(a: CallPrints, b: CallPrints) -> list[tuple[array[int], array[int]]]:
    return [(a.inputs, b.inputs), (a.errors, b.errors), (a.outputs, b.outputs), (a.memories, b.memories)]


def _unequal(x: array[int], y: array[int], block: int = 4096) -> list[int]:
    """The indexes where two arrays of one length differ: blocks compared whole (in C), then the few that differ."""
    found: list[int] = []
    for start in range(0, len(x), block):
        if x[start : start + block] != y[start : start + block]:
            found.extend(k for k in range(start, min(start + block, len(x))) if x[k] != y[k])
    return found


def _differing(a: CallPrints, i: int, b: CallPrints, j: int) -> tuple[str, ...]:
    found = []
    if a.inputs[i] != b.inputs[j]:
        found.append("input")
    if a.errors[i] != b.errors[j]:
        found.append("error")
    if a.outputs[i] != b.outputs[j]:
        found.append("output")
    if a.memories[i] != b.memories[j]:
        found.append("memory")
    return tuple(found)


# --- what differs, for a reader ------------------------------------------------------------------


@dataclass(frozen=True)
class Piece:
    """A run of words of a word diff: `same`, `del` (only in A) or `ins` (only in B)."""

    op: str
    text: str


@dataclass(frozen=True)
class KeyChange:
    """One memory key: `added`, `removed`, `changed` or `same`, with its values in A and B."""

    key: str
    change: str
    a: Any = None
    b: Any = None


@dataclass(frozen=True)
class FieldDiff:
    """One field of a call in both runs: the values, and the place inside them that differs (`path`,
    `.content` of a message) with its word diff, or the memory's keys."""

    field: str
    a: Any
    b: Any
    path: str = ""
    words: tuple[Piece, ...] = ()
    keys: tuple[KeyChange, ...] = ()


@dataclass(frozen=True)
class Details:
    """A differing call, read again: its kind and agent, and each field that differs."""

    difference: Difference
    kind: str
    fields: tuple[FieldDiff, ...] = field(default_factory=tuple)


def details(store: Store, comparison: Comparison, difference: Difference) -> Details:
    """The values of `difference`'s differing fields in both runs, with their word and key diffs."""
    values_a = _values(store, comparison.a, difference.a)
    values_b = _values(store, comparison.b, difference.b)
    kind = values_a.get("kind") or values_b.get("kind") or "call"
    found = []
    for name in difference.fields:
        if name == "call":
            a, b = (values_a.get("call"), values_b.get("call"))
            found.append(FieldDiff("call", a, b))
        elif name == "memory":
            a, b = values_a.get("memory"), values_b.get("memory")
            found.append(FieldDiff("memory", a, b, keys=tuple(memory_changes(a, b))))
        else:
            a, b = values_a.get(name), values_b.get(name)
            path, inner_a, inner_b = narrow(a, b)
            found.append(FieldDiff(name, a, b, path, tuple(word_diff(_text(inner_a), _text(inner_b)))))
    return Details(difference, str(kind), tuple(found))


def _values(store: Store, prints: CallPrints, index: int | None) -> dict[str, Any]:
    """A call's `input`, `output`, `error`, `memory` (and `kind`) as run `prints` recorded them."""
    if index is None:
        return {}
    event = _body(store, prints.event[index])
    tool = prints.index[index]
    if tool >= 0:
        results = event.get("toolResults") or []
        result = results[tool] if tool < len(results) and isinstance(results[tool], dict) else {}
        values = {
            "input": {"tool": result.get("toolName"), "input": result.get("input")},
            "output": result.get("output"),
        }
        values.update(error=result.get("error"), kind="tool")
    elif event.get("type") == "turn:end":
        values = {"input": event.get("messages"), "output": event.get("message"), "error": event.get("error")}
        values["kind"] = "turn"
    else:
        values = {"input": event.get("props"), "output": event.get("result"), "error": event.get("error")}
        values["kind"] = "run" if event.get("type") == "runWith:end" else "agent"
    if prints.memory_event[index] >= 0:
        values["memory"] = _body(store, prints.memory_event[index]).get("memory")
    values["call"] = {"kind": values["kind"], "status": "failed" if values.get("error") else "completed"}
    return values


def _body(store: Store, event_id: int) -> dict[str, Any]:
    rows = store.query("SELECT body FROM events WHERE event_id = ?", [event_id])
    body = orjson.loads(rows[0][0]) if rows else {}
    return body if isinstance(body, dict) else {}


def narrow(a: Any, b: Any) -> tuple[str, Any, Any]:
    """Where inside two values the difference is: descend while exactly one key (or index) differs.

    `({"role": "assistant", "content": "x"}, {... "content": "y"})` → (`.content`, "x", "y").
    """
    path = ""
    while True:
        if isinstance(a, dict) and isinstance(b, dict):
            keys = [k for k in {**a, **b} if a.get(k, _MISSING) != b.get(k, _MISSING)]
            if len(keys) != 1 or keys[0] not in a or keys[0] not in b:
                return path, a, b
            path += f".{keys[0]}"
            a, b = a[keys[0]], b[keys[0]]
        elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            indexes = [n for n, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
            if len(indexes) != 1:
                return path, a, b
            path += f"[{indexes[0]}]"
            a, b = a[indexes[0]], b[indexes[0]]
        else:
            return path, a, b


_MISSING = object()


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()


def word_diff(a: str, b: str) -> list[Piece]:
    """`a` and `b` as one text of words kept, removed (`del`) and added (`ins`); a huge text is not
    diffed (its two sides are shown whole)."""
    words_a, words_b = WORDS.findall(a), WORDS.findall(b)
    if len(words_a) > MAX_DIFF_TOKENS or len(words_b) > MAX_DIFF_TOKENS:
        return [Piece("del", a), Piece("ins", b)]
    pieces: list[Piece] = []
    matcher = difflib.SequenceMatcher(None, words_a, words_b, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            _add(pieces, "same", "".join(words_a[i1:i2]))
            continue
        if i2 > i1:
            _add(pieces, "del", "".join(words_a[i1:i2]))
        if j2 > j1:
            _add(pieces, "ins", "".join(words_b[j1:j2]))
    return pieces


def _add(pieces: list[Piece], op: str, text: str) -> None:
    if pieces and pieces[-1].op == op:
        pieces[-1] = Piece(op, pieces[-1].text + text)
    else:
        pieces.append(Piece(op, text))


def memory_changes(a: Any, b: Any) -> list[KeyChange]:
    """Each key of either memory, in B's order then A's removed ones: added, removed, changed or same."""
    a = a if isinstance(a, dict) else {}
    b = b if isinstance(b, dict) else {}
    changes = []
    for key, new in b.items():
        if key not in a:
            changes.append(KeyChange(key, "added", b=new))
        else:
            changes.append(KeyChange(key, "same" if a[key] == new else "changed", a[key], new))
    changes.extend(KeyChange(key, "removed", a=old) for key, old in a.items() if key not in b)
    return changes


def summary_json(store: Store, comparison: Comparison) -> dict[str, Any]:
    """The answer of `GET /compare?a=&b=` (JSON): the first divergence, how many calls differ of how
    many, and the first differing calls after it (`downstream`)."""
    first = comparison.first
    found: dict[str, Any] | None = None
    if first is not None:
        shown = details(store, comparison, first).fields[0]
        found = {"callId": first.call_id, "name": first.name, "field": shown.field, "path": shown.path,
                 "a": shown.a, "b": shown.b}  # fmt: skip
    return {
        "a": comparison.a.trace_id,
        "b": comparison.b.trace_id,
        "firstDivergence": found,
        "differing": len(comparison.differences),
        "total": comparison.total,
        "downstream": [
            {"callId": d.call_id, "name": d.name, "fields": list(d.fields)}
            for d in comparison.differences[1 : 1 + DOWNSTREAM_LISTED]
        ],
    }


__all__ = ["FRAME", "Comparison", "Details", "Difference", "FieldDiff", "compare", "details", "summary_json"]
