"""Compare two runs: their calls aligned by callId, the first divergence, and what differs in each.

The one place that decides what "the same" means for two runs; the compare page, its JSON
(`GET /compare?a=&b=`) and `devtool diff` all ask `compare`. Calls (frames, turns, tool calls) are
aligned by callId (their fingerprints, `store.call_prints`, joined in one DuckDB query); a call differs in its
`input`, `output`, `error` or `memory`, or is in one run only (`call`); the root's output only
where both runs have one (a `devtool.record` block records none unless it sets one). The **first divergence** is
the differing call that ended first in run A (a call ends before its parent, so of a tool whose
output changed and the agent whose answer changed with it, the tool comes first: innermost first);
a call only B has is placed where B has it. Everything after it is "downstream". Values are read
again (`details`) only for the calls a reader shows: a text that differs becomes an inline word
diff, a memory differs key by key.

The query joins the two runs' stored fingerprints, a small row a call (a run stored before they
were, or one that grew since, has its read from its events: seconds a million events); its answer,
a few rows, is kept for the last pairs compared while neither run grows (their event counts and
last event ids are the key), so asking again costs a lookup.
"""

from __future__ import annotations

import difflib
import functools
import re
from contextlib import closing
from dataclasses import dataclass, field
from typing import Any

import orjson

from devtool.actions.key_diff import Change, diff
from devtool.core.call_names import call_name
from devtool.store import NotFoundError, Store
from devtool.store.call_prints import CACHED, FRAME, LIVE, bucket_prints, run_prints, split

FIELDS = ("call", "input", "error", "output", "memory")  # in the order a call's differences are named
WORDS = re.compile(r"\s+|[^\s\w]|\w+")
DOWNSTREAM_LISTED = 20  # the differing calls after the first that the JSON answer names
MAX_DIFF_TOKENS = 6000  # past this many words a side, a text is shown whole on both sides, not diffed
ALL_CALLS_UP_TO = 600  # runs with at most this many calls have every call listed (the page shows them all)
MAX_DIFFERENCES = 5000  # differing calls listed (in run order); `differing` counts them all
KEPT_PAIRS = 16


@dataclass(frozen=True)
class Ref:
    """Where a run keeps a call's values: its end event, a tool's index in its batch, its memory's event."""

    event: int
    index: int  # -1: not a tool
    memory_event: int  # -1: none


@dataclass(frozen=True)
class Difference:
    """A call that differs: its callId, the fields that differ, and where each run has it."""

    call_id: str
    fields: tuple[str, ...]
    order: int  # its place among the calls (run A's, else run B's): the first divergence is the least
    a: Ref | None  # None: only B has it
    b: Ref | None

    @property
    def name(self) -> str:
        return call_name(self.call_id)

    @property
    def field(self) -> str:
        return self.fields[0]


@dataclass(frozen=True)
class Comparison:
    """Runs `a` and `b` compared: the differing calls in run order (the first 5,000), how many differ
    of how many, how run B's model and tool calls were served, and for small runs every call."""

    a: str
    b: str
    differences: tuple[Difference, ...]
    differing: int
    total: int
    served_b: tuple[int, int]  # run B's calls served from a journal, and run live
    calls: tuple[tuple[str, int], ...] | None  # every call (callId, how B served it), when at most 600

    @property
    def first(self) -> Difference | None:
        return self.differences[0] if self.differences else None

    @property
    def same(self) -> bool:
        return self.differing == 0


# One aggregate row (window functions over the joined calls cost DuckDB minutes at a million events):
# the counts and the differing calls in run order, of the calls `{a_calls}` and `{b_calls}` give.
_JOIN = f"""
WITH a_calls AS ({{a_calls}}), b_calls AS ({{b_calls}}),
joined AS (
    SELECT coalesce(a.call_id, b.call_id) AS call_id, a.call_id IS NULL OR b.call_id IS NULL AS one_sided,
           coalesce(a.pos, b.pos) AS ord, a.event_id AS a_event, a.idx AS a_idx, a.mem_ev AS a_mem,
           b.event_id AS b_event, b.idx AS b_idx, b.mem_ev AS b_mem, coalesce(b.served, -1) AS b_served,
           a.h_in IS DISTINCT FROM b.h_in AS d_input, a.h_err IS DISTINCT FROM b.h_err AS d_error,
           -- The root's output differs only where both runs have one (`call_prints`: a `record` block's has none).
           CASE WHEN coalesce(a.call_id, b.call_id) = 'root' THEN coalesce(a.h_out <> b.h_out, false)
                ELSE a.h_out IS DISTINCT FROM b.h_out END AS d_output,
           a.h_mem IS DISTINCT FROM b.h_mem AS d_memory
    FROM a_calls a FULL JOIN b_calls b USING (call_id)
),
marked AS (SELECT *, one_sided OR d_input OR d_error OR d_output OR d_memory AS differs FROM joined)
SELECT count(*), count(*) FILTER (WHERE differs),
       count(*) FILTER (WHERE b_served = {CACHED}), count(*) FILTER (WHERE b_served = {LIVE}),
       list_slice(list((call_id, one_sided, d_input, d_error, d_output, d_memory, ord,
                        a_event, a_idx, a_mem, b_event, b_idx, b_mem) ORDER BY ord, call_id)
                  FILTER (WHERE differs), 1, {MAX_DIFFERENCES})
FROM marked
"""  # noqa: S608 - constants of ours; the run ids are parameters
_ALL_JOINED = _JOIN.format(a_calls=run_prints("a"), b_calls=run_prints("b"))
# Every call of two small runs, with how run B served it.
_EVERY = f"""
SELECT call_id, coalesce(b.served, -1)
FROM ({run_prints("a")}) a FULL JOIN ({run_prints("b")}) b USING (call_id)
ORDER BY call_id
"""  # noqa: S608 - constants of ours; the run ids are parameters


def compare(store: Store, a: str, b: str) -> Comparison:
    """Runs `a` and `b` (whole ids) compared call by call; `NotFoundError` when either is missing."""
    versions = []
    for trace_id in (a, b):
        rows = store.query("SELECT events, last_event_id FROM runs WHERE trace_id = ?", [trace_id])
        if not rows:
            raise NotFoundError(f"no run {trace_id!r} in the store")
        versions.append(rows[0])
    return _compared(store, a, b, *versions[0], *versions[1])


# Kept for the last pairs asked, as the runs are (their event counts and last event ids): a run that
# grew is compared again.
@functools.lru_cache(maxsize=KEPT_PAIRS)
def _compared(store: Store, a: str, b: str, *versions: int) -> Comparison:
    """The two runs compared anew; `versions` only key the cache."""
    with closing(store.reader()) as cursor:
        cursor.execute("BEGIN TRANSACTION")  # one snapshot of both runs for every query below
        try:
            # Both runs printed: only the calls of their buckets that differ are joined.
            found = split(cursor, a, b)
            if found is None:
                answer = cursor.execute(_ALL_JOINED, {"a": a, "b": b}).fetchall()[0]
            else:
                joined_sql = _JOIN.format(
                    a_calls=bucket_prints("a", found.buckets), b_calls=bucket_prints("b", found.buckets)
                )
                answer = cursor.execute(joined_sql, {"a": a, "b": b}).fetchall()[0]
            joined, differing, cached, live, rows = answer
            total = joined + (found.alike if found else 0)
            if found is not None:
                cached, live = found.cached, found.live
            every = cursor.execute(_EVERY, {"a": a, "b": b}).fetchall() if total <= ALL_CALLS_UP_TO else None
        finally:
            cursor.execute("COMMIT")
    differences = []
    for call_id, one_sided, *flags, order, a_event, a_idx, a_mem, b_event, b_idx, b_mem in rows or ():
        fields = ("call",) if one_sided else tuple(n for n, f in zip(FIELDS[1:], flags, strict=True) if f)
        ref_a = Ref(a_event, a_idx, a_mem) if a_event is not None else None
        ref_b = Ref(b_event, b_idx, b_mem) if b_event is not None else None
        differences.append(Difference(call_id, fields, int(order), ref_a, ref_b))
    calls = tuple((call_id, int(served)) for call_id, served in every) if every is not None else None
    return Comparison(a, b, tuple(differences), int(differing), int(total), (int(cached), int(live)), calls)


# --- what differs, for a reader ------------------------------------------------------------------


@dataclass(frozen=True)
class Piece:
    """A run of words of a word diff: `same`, `del` (only in A) or `ins` (only in B)."""

    op: str
    text: str


@dataclass(frozen=True)
class FieldDiff:
    """One field of a call in both runs: the values, and the place inside them that differs (`path`,
    `.content` of a message) with its word diff, or the memory's keys."""

    field: str
    a: Any
    b: Any
    path: str = ""
    words: tuple[Piece, ...] = ()
    keys: tuple[Change, ...] = ()


@dataclass(frozen=True)
class Details:
    """A differing call, read again: its kind and agent, and each field that differs."""

    difference: Difference
    kind: str
    fields: tuple[FieldDiff, ...] = field(default_factory=tuple)


def details(store: Store, comparison: Comparison, difference: Difference) -> Details:
    """The values of `difference`'s differing fields in both runs, with their word and key diffs."""
    values_a = _values(store, difference.a)
    values_b = _values(store, difference.b)
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


def _values(store: Store, ref: Ref | None) -> dict[str, Any]:
    """A call's `input`, `output`, `error`, `memory` (and `kind`) as its run recorded them."""
    if ref is None:
        return {}
    event = _body(store, ref.event)
    tool = ref.index
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
    if ref.memory_event >= 0:
        values["memory"] = _body(store, ref.memory_event).get("memory")
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


def memory_changes(a: Any, b: Any) -> list[Change]:
    """Each key of either memory (`before` A's, `after` B's), in B's order then A's removed ones."""
    return diff(a if isinstance(a, dict) else None, b if isinstance(b, dict) else None)


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
        "a": comparison.a,
        "b": comparison.b,
        "firstDivergence": found,
        "differing": comparison.differing,
        "total": comparison.total,
        "downstream": [
            {"callId": d.call_id, "name": d.name, "fields": list(d.fields)}
            for d in comparison.differences[1 : 1 + DOWNSTREAM_LISTED]
        ],
    }


__all__ = ["FRAME", "Comparison", "Details", "Difference", "FieldDiff", "compare", "details", "summary_json"]
