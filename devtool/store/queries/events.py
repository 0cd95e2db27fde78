"""Events as they were loaded: of one span, of a run in order (for restore), and after an id (for live).

`run_events` is what `restore_snapshot` takes: a run's events as dicts, ordered by timestamp and then
load order (the order they were emitted in, for equal timestamps). It can leave out, in DuckDB, what a
restore will not need: the events after a `Cut` (a span's end, or a span's start, included so that
restore can find it), the types not in `types` and those in `skip_types` (never the cut's own event).

`events_after(store, after_id)` serves a live stream: `event_id` only grows, so a browser that
reconnects with `Last-Event-ID: N` gets exactly the events it has not seen.
"""

from __future__ import annotations

from collections.abc import Collection, Generator, Iterator
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from devtool.store import list_param
from devtool.store.collector import collector_paused
from devtool.store.database import Store
from devtool.store.errors import NotFoundError

BATCH = 10_000
ID_RANGE = 20_000  # event ids read at a time in id order


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """A TraceEvent as loaded (`event`), and where the store keeps it."""

    event_id: int
    trace_id: str
    span_id: str
    type: str
    ts: float
    event: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Cut:
    """Where `run_events` stops: at span `span_id`'s end (`after`) or its start (`before`), included."""

    span_id: str
    anchor: Literal["before", "after"] = "after"


_STORED = "SELECT event_id, trace_id, span_id, type, ts, body FROM events"


def span_events(store: Store, trace_id: str, span_id: str, *, limit: int = 500, offset: int = 0) -> list[StoredEvent]:
    """The events of a span (its start, its end, the point events with its id) and of its instant
    children (a model call's `budget:update`), in order."""
    rows = store.query(
        f"""{_STORED}
        WHERE trace_id = $trace AND (span_id = $span OR (parent_span_id = $span AND span_id IN (
            SELECT span_id FROM spans WHERE trace_id = $trace AND parent_span_id = $span AND instant)))
        ORDER BY ts, event_id LIMIT $limit OFFSET $offset""",
        {"trace": trace_id, "span": span_id, "limit": limit, "offset": offset},
    )
    return [_stored(row) for row in rows]


def run_events(
    store: Store,
    trace_id: str,
    *,
    cut: Cut | None = None,
    types: Collection[str] | None = None,
    skip_types: Collection[str] | None = None,
    drop_fields: Collection[str] = (),
) -> list[dict[str, Any]]:
    """Run `trace_id`'s events as dicts, by timestamp then load order, up to `cut`, of `types` only
    and none of `skip_types`; the cut's own event is kept whatever its type. `drop_fields` leaves
    those top-level keys out (in DuckDB, before anything is parsed): a reader that never looks at a
    turn's whole conversation need not pay for it.

    A cut at a span or anchor the run does not have cuts nothing: `restore_snapshot` then says what is
    missing in its own words.
    """
    with collector_paused():
        return list(
            iter_run_events(store, trace_id, cut=cut, types=types, skip_types=skip_types, drop_fields=drop_fields)
        )


def iter_run_events(
    store: Store,
    trace_id: str,
    *,
    cut: Cut | None = None,
    types: Collection[str] | None = None,
    skip_types: Collection[str] | None = None,
    drop_fields: Collection[str] = (),
) -> Iterator[dict[str, Any]]:
    """`run_events`, a batch at a time (a run of a million events need not sit in memory twice)."""
    chunks = iter_run_bodies(store, trace_id, cut=cut, types=types, skip_types=skip_types, drop_fields=drop_fields)
    for chunk in chunks:
        with collector_paused():
            events = [orjson.loads(body) for _, body in chunk]
        yield from events


def iter_run_bodies(
    store: Store,
    trace_id: str,
    *,
    cut: Cut | None = None,
    types: Collection[str] | None = None,
    skip_types: Collection[str] | None = None,
    drop_fields: Collection[str] = (),
    by_id: bool = False,
) -> Generator[list[tuple[int, str]], None, None]:
    """`iter_run_events` unparsed, as read, with each event's id: lists of `(event_id, JSON text)` of
    up to `BATCH` events, for a reader that parses them elsewhere (the rewind index's walk, in a
    process of its own).

    `by_id`: in id order, read a range of ids at a time, so that no statement sorts the whole run
    (for a run whose events are stored in time order, the same order).
    """
    where: list[str] = ["trace_id = $trace"]
    kinds: list[str] = []
    params: dict[str, object] = {"trace": trace_id}
    with store.reader() as cursor:
        if not cursor.execute("SELECT 1 FROM runs WHERE trace_id = ?", [trace_id]).fetchall():
            raise NotFoundError(f"no run {trace_id!r} in the store")
        if cut is not None:
            column = "end_event_id" if cut.anchor == "after" else "start_event_id"
            boundary = cursor.execute(
                f"SELECT e.ts, e.event_id FROM spans s JOIN events e ON e.event_id = s.{column} "
                "WHERE s.trace_id = ? AND s.span_id = ?",
                [trace_id, cut.span_id],
            ).fetchall()
            if boundary:
                where.append("(ts < $cut_ts OR (ts = $cut_ts AND event_id <= $cut_id))")
                params.update(cut_ts=boundary[0][0], cut_id=boundary[0][1])
        if types is not None:
            kinds.append(f"type IN (SELECT unnest({list_param.of('types')}))")
            params["types"] = list_param.values(types)
        if skip_types:
            kinds.append(f"type NOT IN (SELECT unnest({list_param.of('skip')}))")
            params["skip"] = list_param.values(skip_types)
        if kinds:
            keep = " AND ".join(kinds)
            where.append(f"({keep} OR event_id = $cut_id)" if "cut_id" in params else keep)
        body = "body"
        if drop_fields:
            # A JSON merge patch that sets a key to null removes it (RFC 7396).
            body = "json_merge_patch(body, $drop)"
            params["drop"] = orjson.dumps(dict.fromkeys(drop_fields)).decode()
        select = f"SELECT event_id, {body} FROM events WHERE {' AND '.join(where)}"
        if not by_id:
            yield from _fetched(cursor.execute(f"{select} ORDER BY ts, event_id", params))
            return
        ids = cursor.execute("SELECT min(event_id), max(event_id) FROM events WHERE trace_id = ?", [trace_id])
        first, last = ids.fetchall()[0]
        for low in range(first, last + 1, ID_RANGE):
            # The range lets DuckDB skip the row groups outside it (zone maps on event_id).
            ranged = f"{select} AND event_id BETWEEN $low AND $high ORDER BY event_id"
            yield from _fetched(cursor.execute(ranged, {**params, "low": low, "high": low + ID_RANGE - 1}))


def _fetched(result: Any) -> Iterator[list[tuple[int, str]]]:
    while rows := result.fetchmany(BATCH):
        yield rows


def events_after(store: Store, after_id: int, *, trace_id: str | None = None, limit: int = 1000) -> list[StoredEvent]:
    """Events with ids above `after_id` (of one run, or of all), in id order: a live stream's next batch."""
    where = "event_id > $after" + (" AND trace_id = $trace" if trace_id is not None else "")
    params: dict[str, Any] = {"after": after_id, "limit": limit}
    if trace_id is not None:
        params["trace"] = trace_id
    rows = store.query(f"{_STORED} WHERE {where} ORDER BY event_id LIMIT $limit", params)
    return [_stored(row) for row in rows]


BODY_RANGE = 250_000  # event ids one `event_fields` lookup may span (DuckDB decompresses the range's bodies)


def event_fields(cursor: Any, event_ids: Collection[int], path: str, *, chars: int = 2000) -> dict[int, str]:
    """The JSON text at `path` (`$.props`, `$.memory`) of a few events' bodies, by event id, at most
    `chars` characters each (a value cut short is no longer JSON: callers read it as text).

    Events read together were written close together (siblings' starts, a run's generation ends),
    so their ids fall in a few short ranges: each range is read with `BETWEEN` (DuckDB skips the row
    groups outside it; an `IN` list alone decompresses every body of the table). Ids far from the
    others (more than `BODY_RANGE` away) are read in a range of their own; at most 8 ranges are read.
    """
    clusters: list[list[int]] = []
    for event_id in sorted(set(event_ids)):
        if clusters and event_id - clusters[-1][0] <= BODY_RANGE:
            clusters[-1].append(event_id)
        else:
            clusters.append([event_id])
    found: dict[int, str] = {}
    for cluster in clusters[:8]:
        marks = ", ".join("?" * len(cluster))
        rows = cursor.execute(
            f"SELECT event_id, left(body->>?, ?) FROM events WHERE event_id BETWEEN ? AND ? AND event_id IN ({marks})",
            [path, chars, cluster[0], cluster[-1], *cluster],
        ).fetchall()
        found.update((event_id, text) for event_id, text in rows if text is not None)
    return found


def last_event_id(store: Store) -> int:
    """The highest event id in the store (0 when empty): where a new live stream starts."""
    return int(store.query("SELECT coalesce(max(event_id), 0) FROM events")[0][0])


def _stored(row: tuple[Any, ...]) -> StoredEvent:
    event_id, trace_id, span_id, type_, ts, body = row
    return StoredEvent(event_id, trace_id, span_id, type_, ts, orjson.loads(body))
