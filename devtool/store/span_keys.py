"""Finding a big run's spans without scanning them: its spans' keys, sorted two ways, and more.

`spans` is stored in time order, which is what the timeline reads; a span asked for by its id, or a
page of one parent's children, is a scan of every span of the run (a tenth of a second at ten million
events, and a page asks several). So a big run also gets narrow copies of its spans' keys, each
sorted so that DuckDB's zone maps find a key in one or two row groups:

- `span_keys`: each span but instants (no page asks for one by its id) under a hash of its trace and
  span id, with its start and frame parent: its row in `spans` is then read by its start time;
- `frame_keys`: each span the frame tree shows under a hash of its trace and frame parent, then its
  start: a parent's children are one range, so a page of them, or a child's place among them, is
  read from that range alone;
- `span_text`, `span_labels`, `span_grams`: what the run page's span search reads (`span_search`);
- `span_failures`: its failed spans, with their names and callIds: what its cause reads (`span_failures`);
- `agent_generations`: each generation that ended, with its agent's callId, its name and its end, under
  a hash of its trace and that callId with an index on it: what a snapshot page reads to say where each
  frame's memory came from (its frames are named by callId), a lookup in the index per frame instead
  of a join of the run's spans with themselves;
- `span_tiles`: the spans the timeline draws (not instants, not `HIDDEN_KINDS`) grouped by row
  (depth), kind, and the tile of time they start in and the one they end in, of `TILES` tiles across
  the run, with their frame parent when they share one and whether they share a name: what the
  timeline reads when it shows so much of the run that a pixel holds many tiles (`timeline.py`);
  `span_tiles_fine` groups them in `FINE_TILES` tiles, for windows four times narrower.

They are made by `span_keys_build` (a load, the server's indexer); a run's keys are used while it has
not changed since it was keyed (`keyed_runs` records its last event then): a run that grew is read
by scanning `spans`, as a small run is, until it is keyed again.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import duckdb

from devtool.store import list_param, span_failures, span_search

TILES = 16384  # tiles across a run: a pixel of a whole run 1,600 px wide holds 10
FINE_TILES = 4 * TILES  # the finer tiles of `span_tiles_fine`: a quarter of the run at 1,600 px, 10 a pixel

# A frame parent's children in the tree's order; `key` first, so that zone maps find the range.
_CHILDREN = """
    SELECT span_id, start_ts FROM frame_keys
    WHERE key = hash($trace, coalesce($parent, '')) AND run = $run
      AND frame_parent_id IS NOT DISTINCT FROM $parent
"""


@dataclass(frozen=True, slots=True)
class SpanKey:
    """Where a span is: its start (its row in `spans` is read by it) and its frame parent."""

    span_id: str
    start_ts: float
    start_event_id: int | None
    frame_parent_id: str | None
    shown: bool


@dataclass(frozen=True, slots=True)
class Tiles:
    """A keyed run's tiles of time: tile i starts at `origin + i * width` (ms)."""

    origin: float
    width: float


def tiles(cursor: duckdb.DuckDBPyConnection, trace_id: str) -> Tiles | None:
    """The run's tiles, or None when it is not keyed (or changed since)."""
    rows = cursor.execute(f"SELECT tile_origin, tile_ms FROM {_FRESH}", [trace_id]).fetchall()
    return Tiles(*rows[0]) if rows else None


def locate(cursor: duckdb.DuckDBPyConnection, trace_id: str, span_ids: Sequence[str]) -> dict[str, SpanKey] | None:
    """The keys of `span_ids` that the run has (instants are not there), or None: the run is not keyed."""
    run = _run(cursor, trace_id)
    if run is None:
        return None
    found: dict[str, SpanKey] = {}
    # One lookup per id, its hash a constant: DuckDB then reads the one row group its zone map allows
    # (a list of hashes spans every row group: it would read them all).
    for span_id in dict.fromkeys(span_ids):
        rows = cursor.execute(
            "SELECT span_id, start_ts, start_event_id, frame_parent_id, shown FROM span_keys "
            "WHERE key = hash(?, ?) AND run = ? AND span_id = ?",
            [trace_id, span_id, run, span_id],
        ).fetchall()
        if rows:
            found[span_id] = SpanKey(*rows[0])
    return found


def where_spans(cursor: duckdb.DuckDBPyConnection, trace_id: str, span_ids: Sequence[str]) -> tuple[str, list[Any]]:
    """A condition on `spans` for the rows of `span_ids` of the run, and its parameters: within their
    start times when the run is keyed (DuckDB reads the row groups that hold them), else by id alone."""
    found = locate(cursor, trace_id, span_ids)
    if found:
        return where_located(trace_id, [(key.span_id, key.start_ts) for key in found.values()])
    ids = list(dict.fromkeys(span_ids)) or [""]
    return f"trace_id = ? AND span_id IN ({_marks(ids)})", [trace_id, *ids]


def edge_event(cursor: duckdb.DuckDBPyConnection, trace_id: str, span_id: str, anchor: str) -> int | None:
    """The span's first start event (`before`) or end event (`after`) of a run stored in time order (its
    events' ids in the order of their timestamps): the event a restore cuts the run at. None when
    the span has no such event. Read from the span's row (by its key, when the run is keyed); only a
    span of more events than a start and an end has its events read (its ends: `spans` keeps its last)."""
    where, params = where_spans(cursor, trace_id, [span_id])
    rows = cursor.execute(
        f"SELECT start_event_id, end_event_id, events FROM spans WHERE {where} AND NOT instant", params
    ).fetchall()
    if not rows:
        return None  # no such span, or an instant (its one event is neither a start nor an end)
    start, end, events = rows[0]
    if anchor == "before":
        return None if start is None else int(start)
    if end is None:
        return None
    if start is not None and events == 2:
        return int(end)  # its one start and its one end
    found = cursor.execute(
        "SELECT event_id FROM events WHERE trace_id = ? AND span_id = ? AND ends_with(type, ':end') "
        "AND event_id <= ? ORDER BY ts, event_id LIMIT 1",
        [trace_id, span_id, end],
    ).fetchall()
    return int(found[0][0]) if found else None


def where_located(trace_id: str, located: Sequence[tuple[str, float]]) -> tuple[str, list[Any]]:
    """A condition on `spans` for the rows of spans whose starts are known, and its parameters."""
    if not located:
        return "false", []
    if len(located) == 1:
        # One span (a root, a step of a path, a detail): equalities, which DuckDB 1.5 filters in a third
        # less CPU than `BETWEEN s AND s` and `IN (id)` over the row group it reads.
        ((span_id, start),) = located
        return "trace_id = ? AND start_ts = ? AND span_id = ?", [trace_id, start, span_id]
    ids = [span for span, _ in located]
    starts = [start for _, start in located]
    return (
        f"trace_id = ? AND start_ts BETWEEN ? AND ? AND span_id IN ({_marks(ids)})",
        [trace_id, min(starts), max(starts), *ids],
    )


def children(
    cursor: duckdb.DuckDBPyConnection, trace_id: str, parent: str | None, *, offset: int, limit: int
) -> list[tuple[str, float]] | None:
    """A page of `parent`'s frame children (of the roots when None) in the tree's order, as (span id,
    start); None when the run is not keyed."""
    run = _run(cursor, trace_id)
    if run is None:
        return None
    rows = cursor.execute(
        f"{_CHILDREN} ORDER BY start_ts, start_event_id LIMIT $limit OFFSET $offset",
        {"trace": trace_id, "run": run, "parent": parent, "limit": limit, "offset": offset},
    ).fetchall()
    return [(span, start) for span, start in rows]


def children_of(
    cursor: duckdb.DuckDBPyConnection, trace_id: str, parents: Sequence[str], *, offset: int, limit: int
) -> dict[str, list[tuple[str, float]]] | None:
    """`children` of several parents of a thousand children or so at most (each read whole), each page
    in the tree's order; None when not keyed."""
    run = _run(cursor, trace_id)
    if run is None:
        return None
    found: dict[str, list[tuple[str, float, int | None]]] = {parent: [] for parent in parents}
    if not found:
        return {}
    hashed = cursor.execute(
        f"SELECT hash($trace, p) FROM unnest({list_param.of('ps')}) AS t(p)",
        {"trace": trace_id, "ps": list_param.values(found)},
    ).fetchall()
    keys = [key for (key,) in hashed]
    # The hashes as typed constants: DuckDB looks each parent's children up in `frame_keys`' index.
    rows = cursor.execute(
        "SELECT frame_parent_id, span_id, start_ts, start_event_id FROM frame_keys "
        f"WHERE key IN ({', '.join(['?::UBIGINT'] * len(keys))}) AND run = ?",
        [*keys, run],
    ).fetchall()
    for parent, span, start, event in rows:
        if parent in found:  # not another parent of the same hash
            found[parent].append((span, start, event))
    # In the tree's order (spans of no start event last, as DuckDB sorts their NULLs).
    return {
        parent: [(span, start) for span, start, _ in sorted(page, key=_tree_order)[offset : offset + limit]]
        for parent, page in found.items()
    }


def _tree_order(child: tuple[str, float, int | None]) -> tuple[float, bool, int]:
    _, start, event = child
    return (start, event is None, event or 0)


def count(cursor: duckdb.DuckDBPyConnection, trace_id: str, parent: str | None) -> int | None:
    """How many frame children `parent` (None: the roots) has; None when the run is not keyed."""
    run = _run(cursor, trace_id)
    if run is None:
        return None
    rows = cursor.execute(f"SELECT count(*) FROM ({_CHILDREN})", {"trace": trace_id, "run": run, "parent": parent})
    return int(rows.fetchall()[0][0])


def position(cursor: duckdb.DuckDBPyConnection, trace_id: str, key: SpanKey) -> int:
    """A span's place among its frame siblings (of a keyed run)."""
    run = _run(cursor, trace_id)
    rows = cursor.execute(
        f"""
        SELECT count(*) FROM ({_CHILDREN.replace("SELECT span_id, start_ts", "SELECT start_ts, start_event_id")})
        WHERE start_ts < $start OR (start_ts = $start AND start_event_id < $event)
        """,
        {"trace": trace_id, "run": run, "parent": key.frame_parent_id, "start": key.start_ts,
         "event": key.start_event_id},
    ).fetchall()  # fmt: skip
    return int(rows[0][0])


def search(
    cursor: duckdb.DuckDBPyConnection, trace_id: str, text: str, *, ranks: tuple[str, str], prefix: str, limit: int
) -> list[tuple[str, float]] | None:
    """`span_search.search` of the run, or None when it is not keyed (or the text holds the separator
    of the fields of the text it searches)."""
    found = cursor.execute(f"SELECT run, tile_origin, tile_ms FROM {_FRESH}", [trace_id]).fetchall()
    if not found or chr(span_search.SEPARATOR) in text:
        return None
    run, origin, width = found[0]
    window = (origin, origin + width * TILES)
    return span_search.search(cursor, run, text, ranks=ranks, prefix=prefix, limit=limit, window=window)


def named(cursor: duckdb.DuckDBPyConnection, trace_id: str, text: str, *, limit: int) -> list[tuple[str, float]] | None:
    """`span_search.named` of the run, or None when it is not keyed."""
    found = cursor.execute(f"SELECT run, tile_origin, tile_ms FROM {_FRESH}", [trace_id]).fetchall()
    if not found:
        return None
    run, origin, width = found[0]
    return span_search.named(cursor, run, text, limit=limit, window=(origin, origin + width * TILES))


def failed_relation(cursor: duckdb.DuckDBPyConnection, trace_id: str) -> str | None:
    """The run's failed spans as a relation of SQL (`span_failures.OF_RUN`), or None when it is not keyed."""
    run = _run(cursor, trace_id)
    return None if run is None else span_failures.OF_RUN.format(run=int(run))


def failed_names(
    cursor: duckdb.DuckDBPyConnection, trace_id: str, span_ids: Sequence[str]
) -> dict[str, tuple[str, Any]]:
    """The names and callIds of the run's failed spans `span_ids`, by id; none when it is not keyed."""
    run = _run(cursor, trace_id)
    rows = (
        []
        if run is None
        else cursor.execute(span_failures.NAMES, {"run": run, "ids": list_param.values(span_ids)}).fetchall()
    )
    return {span_id: (name, call_id) for span_id, name, call_id in rows}


def generation_ends(
    cursor: duckdb.DuckDBPyConnection, trace_id: str, call_ids: Sequence[str]
) -> list[tuple[str, str, float, int]] | None:
    """The ended generations of the agents `call_ids` as (agent callId, name, end, end event id), in
    the order they ended; None when the run is not keyed."""
    run = _run(cursor, trace_id)
    if run is None:
        return None
    wanted = list(dict.fromkeys(call_ids))
    if not wanted:
        return []
    keys = [
        key
        for (key,) in cursor.execute(
            f"SELECT hash($trace, c) FROM unnest({list_param.of('cs')}) AS t(c)",
            {"trace": trace_id, "cs": list_param.values(wanted)},
        ).fetchall()
    ]
    # The hashes as typed constants: DuckDB then looks each up in the index (a list bound as one
    # value, or a filter on callId beside them, and it scans the table instead).
    rows = cursor.execute(
        f"SELECT call_id, name, end_ts, end_event_id FROM agent_generations "
        f"WHERE key IN ({', '.join(['?::UBIGINT'] * len(keys))}) AND run = ? ORDER BY end_ts, end_event_id",
        [*keys, run],
    ).fetchall()
    asked = set(wanted)  # another callId of the same hash, however unlikely, is not one asked for
    return [(call_id, name, ended, event_id) for call_id, name, ended, event_id in rows if call_id in asked]


# The run's keys, if they are of the run as it is.
_FRESH = "keyed_runs k JOIN runs r USING (trace_id) WHERE trace_id = ? AND k.last_event_id = r.last_event_id"


def _run(cursor: duckdb.DuckDBPyConnection, trace_id: str) -> int | None:
    """The run's number among the keyed ones (what its keys are filed under), or None: not keyed, or
    changed since. Looked up once a cursor: a page's reads on one cursor (a tree: a few dozen lookups)
    take the run as it was at the first."""
    known = _RUNS.setdefault(cursor, {})
    if trace_id not in known:
        rows = cursor.execute(f"SELECT run FROM {_FRESH}", [trace_id]).fetchall()
        known[trace_id] = int(rows[0][0]) if rows else None
    return known[trace_id]


_RUNS: weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, dict[str, int | None]] = weakref.WeakKeyDictionary()


def _marks(values: Sequence[object]) -> str:
    return ", ".join("?" * len(values))
