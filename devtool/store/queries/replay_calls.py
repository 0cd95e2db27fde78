"""What a replay served from its snapshot and what it ran live, and why each live call ran.

A replay (a run started from a snapshot: `metadata.replay` as the DevTool's Replay records it, or
`metadata.snapshot` as `devtool run --snapshot` does) answers each model request and tool call from
the snapshot's journal when the journal holds its content hash, and runs it live otherwise. A live
call ran for one of three reasons, told apart by the original run's own calls:

- `changed`: the original made the call at the same callId with another input (another content hash),
  or, for a model request, made the frame's request of the same rank to another model (whose callId
  names the model): the replay's input changed, so the recorded answer was not its answer;
- `cut`: the original made the same call (same callId and content hash) and journaled it, but the
  snapshot does not hold it: the rewind cut before it, or a fork dropped it (what the user asked for);
- `unrecorded`: the recording holds nothing that could have answered it (the original never made a
  call there, or made it without journaling it: a failure, an output that was not JSON, a call the
  instrumentation did not see). This is the one a user must hear about: its side effects happened again.

What the original journaled follows restore's rules (`devtool.core.restore_walk`): a turn's end that
succeeded with a content hash and an answer, a tool result that succeeded with a content hash and an
output that is not a tombstone; in the frame the call belongs to, whose journal is keyed by content
hash. Only `turn:end` and `tools:execute:end` events are read, without their conversations.

Which calls ran live comes from the replay's stored call fingerprints (`store/call_prints.py`: each
call's `served`, frame, live or cached) when it is printed: a call is told apart by its own frame's
calls only, so only the call ends of the frames holding a live call are read, of both runs (of the
original, all its call ends when it is not printed). A replay served whole reads no event at all; a
replay not printed (an older store's, until `print_older` prints it) is read from its events whole.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import closing
from dataclasses import dataclass
from typing import Any, Literal

import duckdb
import orjson

from devtool.store import call_prints, list_param, live_index
from devtool.store.collector import collector_paused
from devtool.store.database import Store
from devtool.store.errors import NotFoundError
from devtool.store.queries.events import BODY_RANGE, iter_run_events
from devtool.store.queries.run_meta import run_metadata
from devtool.store.snapshots import get_snapshot

Reason = Literal["changed", "cut", "unrecorded"]
CallKind = Literal["prompt", "tool"]
_CALL_TYPES = ("turn:end", "tools:execute:end")
# Fields a call's classification never reads: a turn's conversation and tools, a frame's memory.
_UNREAD = ("messages", "request", "memory", "toolConfig", "schema")
_SNAPSHOT_URL = re.compile(r"/snapshots/([0-9a-f]{64})\.json(?:$|\?)")


@dataclass(frozen=True, slots=True)
class LiveCall:
    """A call of the replay that ran live: where (its callId, and its node in the run's tree: a turn's
    span, a tool's result `<batch span>#<index>`), what (a model request or a tool, the model's or the
    tool's name), and why."""

    call_id: str
    kind: CallKind
    name: str
    span: str
    reason: Reason


@dataclass(frozen=True, slots=True)
class ReplayCalls:
    """A replay's calls: how many were served from the snapshot, and each one that ran live."""

    trace_id: str  # the replay's
    original: str
    snapshot_id: str | None
    cached: int
    live: tuple[LiveCall, ...]

    def because(self, reason: Reason) -> list[LiveCall]:
        return [call for call in self.live if call.reason == reason]

    @property
    def unrecorded_spans(self) -> frozenset[str]:
        """The tree's nodes of the calls that ran live with nothing recorded to answer them."""
        return frozenset(call.span for call in self.because("unrecorded"))


@dataclass(frozen=True, slots=True)
class _Call:
    call_id: str
    kind: CallKind
    name: str
    span: str
    content_hash: str | None
    cache: bool
    journaled: bool  # what restore would journal of it

    @property
    def frame(self) -> str:
        return self.call_id.rsplit("/", 1)[0]


def replay_origin(store: Store, metadata: dict[str, Any]) -> tuple[str | None, str | None]:
    """(the original run's trace id, the snapshot id) a run's metadata says it replayed, each None when
    unknown; the original from the stored snapshot's provenance when the metadata does not name it."""
    found = metadata.get("replay")
    replay: dict[str, Any] = found if isinstance(found, dict) else {}
    original, snapshot_id = replay.get("originalTraceId"), replay.get("snapshotId")
    if not isinstance(snapshot_id, str) and isinstance(metadata.get("snapshot"), str):
        found = _SNAPSHOT_URL.search(metadata["snapshot"])
        snapshot_id = found.group(1) if found else None
    if not isinstance(snapshot_id, str):
        snapshot_id = None
    if not isinstance(original, str) and snapshot_id is not None:
        try:
            original = get_snapshot(store, snapshot_id).top.get("provenance", {}).get("traceId")
        except NotFoundError:
            original = None
    return (original if isinstance(original, str) else None), snapshot_id


def replay_calls(store: Store, trace_id: str, original: str | None = None) -> ReplayCalls | None:
    """Run `trace_id`'s calls, as a replay of `original` (by default the run its metadata says it
    replayed); None when it replayed no run this store has."""
    snapshot_id: str | None = None
    if original is None:
        original, snapshot_id = replay_origin(store, run_metadata(store, trace_id))
    if original is None or original == trace_id:
        return None
    rows = store.query("SELECT trace_id, last_event_id FROM runs WHERE trace_id IN (?, ?)", [trace_id, original])
    versions = dict(rows)
    if original not in versions or trace_id not in versions:
        return None
    return _classified(store, trace_id, original, snapshot_id, versions[trace_id], versions[original])


# A page, its tree and each selection ask again: a run's calls are read again only once it has more events.
@functools.lru_cache(maxsize=32)
def _classified(
    store: Store, trace_id: str, original: str, snapshot_id: str | None, replay_version: int, original_version: int
) -> ReplayCalls:
    """`replay_calls` of the runs as they are at these last event ids."""
    with closing(store.reader()) as cursor:
        served = _served(store, cursor, trace_id)
        if served is None:  # the replay is not printed: every call of both runs, from their events
            cached, live = _sorted(_calls(store, original), _calls(store, trace_id))
            return ReplayCalls(trace_id, original, snapshot_id, cached, live)
        cached, frames = served
        if not frames:
            return ReplayCalls(trace_id, original, snapshot_id, cached, ())
        # A call is told apart by its own frame's calls only: both runs' calls in the frames of the
        # calls that ran live are read, the rest of the runs not at all.
        before = _calls_of(store, cursor, original, frames)
        again = _calls_of(store, cursor, trace_id, frames)
    return ReplayCalls(trace_id, original, snapshot_id, cached, _sorted(before, again)[1])


def _sorted(original: Iterable[_Call], replay: Iterable[_Call]) -> tuple[int, tuple[LiveCall, ...]]:
    """How many of `replay`'s calls were served from the journal, and each one that ran live, and why,
    against `original`'s calls (of the same frames, at least)."""
    recorded: dict[str, str | None] = {}
    # Per frame, the original's model requests in order: a request to another model has another callId
    # (the model is in it), and is the same request with its input changed.
    requests: dict[str, list[str | None]] = {}
    journaled: set[tuple[str, CallKind, str]] = set()
    for call in original:
        recorded[call.call_id] = call.content_hash
        if call.kind == "prompt":
            requests.setdefault(call.frame, []).append(call.content_hash)
        if call.journaled and call.content_hash is not None:
            journaled.add((call.frame, call.kind, call.content_hash))
    cached = 0
    asked: Counter[str] = Counter()
    live: list[LiveCall] = []
    for call in replay:
        before = recorded.get(call.call_id)
        if call.kind == "prompt":
            earlier, nth = requests.get(call.frame, []), asked[call.frame]
            asked[call.frame] += 1
            if call.call_id not in recorded and nth < len(earlier):
                before = earlier[nth]
        if call.cache:
            cached += 1
            continue
        reason: Reason
        if before is not None and before != call.content_hash:
            reason = "changed"
        elif call.content_hash is not None and (call.frame, call.kind, call.content_hash) in journaled:
            reason = "cut"
        else:
            reason = "unrecorded"
        live.append(LiveCall(call.call_id, call.kind, call.name, call.span, reason))
    return cached, tuple(live)


# A call's frame in SQL, as `_Call.frame`: its callId up to the last '/'.
_FRAME_SQL = "left(call_id, length(call_id) - strpos(reverse(call_id), '/'))"


def _served(store: Store, cursor: duckdb.DuckDBPyConnection, trace_id: str) -> tuple[int, frozenset[str]] | None:
    """From run `trace_id`'s stored call fingerprints: how many of its calls were served from a journal,
    and the frames of those that ran live; None when the run is not printed."""
    if not live_index.printed(store, cursor, trace_id):
        return None
    # Counted per bucket at load. A call with no frame ('/'-less: a tool result's model-given id, of a
    # trace written before `callPath`) counts too, where a run's events read whole skip it: a replay is
    # run by our runtime, whose every call has its path.
    ((cached,),) = cursor.execute("SELECT sum(cached) FROM print_buckets WHERE trace_id = ?", [trace_id]).fetchall()
    frames = cursor.execute(
        f"SELECT DISTINCT {_FRAME_SQL} FROM call_prints "
        f"WHERE trace_id = ? AND served = {call_prints.LIVE} AND contains(call_id, '/')",
        [trace_id],
    ).fetchall()
    return int(cached or 0), frozenset(frame for (frame,) in frames)


# Up to this many frames, a call's frame is matched by its callId's prefix (a frame's callId and a '/',
# no other '/' after), which DuckDB checks faster than it cuts every callId at its last '/'.
_FEW_FRAMES = 64


def _calls_of(store: Store, cursor: duckdb.DuckDBPyConnection, trace_id: str, frames: frozenset[str]) -> list[_Call]:
    """Run `trace_id`'s calls in `frames`, in order: the end events its fingerprints place there when
    it is printed, else all its call ends read."""
    if not live_index.printed(store, cursor, trace_id):
        return [call for call in _calls(store, trace_id) if call.frame in frames]
    chosen = sorted(frames)
    params: dict[str, Any] = {"trace": trace_id}
    if len(chosen) <= _FEW_FRAMES:
        inside = " OR ".join(
            f"(starts_with(call_id, $f{i}) AND NOT contains(substr(call_id, $n{i}), '/'))" for i in range(len(chosen))
        )
        for i, frame in enumerate(chosen):
            params |= {f"f{i}": f"{frame}/", f"n{i}": len(frame) + 2}
    else:
        inside = f"contains(call_id, '/') AND {_FRAME_SQL} IN (SELECT unnest({list_param.of('frames')}))"
        params["frames"] = list_param.values(chosen)
    calls = f"FROM call_prints WHERE trace_id = $trace AND served <> {call_prints.FRAME} AND ({inside})"
    ids = cursor.execute(f"SELECT DISTINCT event_id {calls}", params).fetchall()
    events = _events(cursor, trace_id, sorted(event_id for (event_id,) in ids))
    return [call for call in _parsed(events) if call.frame in frames]


def _events(cursor: duckdb.DuckDBPyConnection, trace_id: str, event_ids: list[int]) -> list[dict[str, Any]]:
    """Run `trace_id`'s call end events `event_ids` (sorted), in the order `iter_run_events` reads them.
    Ids close together are read as one range: DuckDB skips the row groups outside it (an id list alone
    would decompress every body of the run)."""
    ranges: list[list[int]] = []
    for event_id in event_ids:
        if ranges and event_id - ranges[-1][-1] <= BODY_RANGE:
            ranges[-1].append(event_id)
        else:
            ranges.append([event_id])
    drop = orjson.dumps(dict.fromkeys(_UNREAD)).decode()
    rows: list[tuple[Any, int, str]] = []
    for ids in ranges:
        rows += cursor.execute(
            "SELECT ts, event_id, json_merge_patch(body, $drop) FROM events WHERE trace_id = $trace "
            f"AND event_id BETWEEN $lo AND $hi AND event_id IN (SELECT unnest({list_param.of('ids', 'BIGINT')})) "
            f"AND type IN (SELECT unnest({list_param.of('types')}))",
            {
                "drop": drop,
                "trace": trace_id,
                "lo": ids[0],
                "hi": ids[-1],
                "ids": list_param.values(ids),
                "types": list_param.values(_CALL_TYPES),
            },
        ).fetchall()
    rows.sort(key=lambda row: (row[0], row[1]))
    with collector_paused():
        return [orjson.loads(body) for _, _, body in rows]


def unrecorded_spans(store: Store, trace_id: str) -> frozenset[str]:
    """The tree's nodes of run `trace_id` that ran live with nothing recorded to answer them (none
    unless it is a replay)."""
    calls = replay_calls(store, trace_id)
    return calls.unrecorded_spans if calls is not None else frozenset()


def _calls(store: Store, trace_id: str) -> Iterator[_Call]:
    """Run `trace_id`'s model requests (turns) and tool calls, in order."""
    return _parsed(iter_run_events(store, trace_id, types=_CALL_TYPES, drop_fields=_UNREAD))


def _parsed(events: Iterable[dict[str, Any]]) -> Iterator[_Call]:
    """The model requests (turns) and tool calls that call end events record, in their order."""
    for event in events:
        span = str((event.get("trace") or {}).get("spanId", ""))
        digest = event.get("contentHash")
        if event["type"] == "turn:end":
            call_id = event.get("callId")
            if not isinstance(call_id, str) or "/" not in call_id:
                continue
            model = event.get("model")
            name = model.get("id") if isinstance(model, dict) else None
            answer = event["response"] if "response" in event else event.get("message")
            yield _Call(
                call_id,
                "prompt",
                str(name or "model"),
                span,
                digest if isinstance(digest, str) else None,
                event.get("cache") is True,
                event.get("success") is True and isinstance(digest, str) and answer is not None,
            )
            continue
        found = event.get("toolResults")
        results: list[Any] = found if isinstance(found, list) else []
        for index, result in enumerate(results):
            if not isinstance(result, dict):
                continue
            call_id = result.get("callPath", result.get("callId"))  # a tool result's own (older traces: callId)
            if not isinstance(call_id, str) or "/" not in call_id:
                continue
            digest = result.get("contentHash")
            yield _Call(
                call_id,
                "tool",
                str(result.get("toolName") or "tool"),
                f"{span}#{index}",
                digest if isinstance(digest, str) else None,
                result.get("cache") is True,
                result.get("success") is True and isinstance(digest, str) and result.get("tombstone") is not True,
            )
