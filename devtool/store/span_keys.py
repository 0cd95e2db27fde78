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

A load makes them for each run of `LOAD_KEYED_EVENTS` events or more it stores or adds to, in its own
transaction (`key_runs`; a few seconds of the load's CPU a million events), so a big run loaded is
never seen without them: a teammate's link opened the minute a ten-million-event load ends reads from
them. The server's background indexer makes them (`key_run`) for other runs of 50,000 events or more
once they stop growing (`devtool.actions.frame_indexer`), in a transaction of its own on a cursor of
its own that writes none of what loads and appends write: nothing waits for it. A run's keys are used
while it has not changed since: `keyed_runs` records its last event then, and a run that grew (a live
batch) is read by scanning `spans`, as a small run is, until it is keyed again.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import duckdb

from devtool.store import list_param, span_failures, span_search
from devtool.store.database import unless_raced
from devtool.store.run_caches import stale_runs
from devtool.store.span_sql import HIDDEN_KINDS, shown

if TYPE_CHECKING:
    from devtool.store.database import Store

TILES = 16384  # tiles across a run: a pixel of a whole run 1,600 px wide holds 10
FINE_TILES = 4 * TILES  # the finer tiles of `span_tiles_fine`: a quarter of the run at 1,600 px, 10 a pixel
# A load keys the runs it leaves this big (the server's indexer keys the others, past its own threshold).
LOAD_KEYED_EVENTS = 50_000

# The timeline's tiles of runs (SQL over `k`, the run's `keyed_runs`): the fine ones from the spans,
# with the hashes that tell whether a group's spans share a frame parent and a name, kept to group them
# again into the coarse ones, `_PER_FINE` fine tiles to a coarse one. (A span's time over the fine
# width is exactly `_PER_FINE` times its time over the coarse one, a power of two, so the coarse tile
# it is in is the fine one divided: one pass over the spans makes both.)
_PER_FINE = FINE_TILES // TILES
_TILED = f"""
    CREATE OR REPLACE TEMP TABLE fine_tiles AS
    SELECT s.trace_id, s.depth,
           least(floor((s.start_ts - k.tile_origin) / (k.tile_ms / {_PER_FINE})), {FINE_TILES} - 1)::BIGINT
               AS start_tile,
           least(floor((coalesce(s.end_ts, r.ended_ts) - k.tile_origin) / (k.tile_ms / {_PER_FINE})),
                 {FINE_TILES} - 1)::BIGINT AS end_tile,
           min(s.start_ts) AS first, max(coalesce(s.end_ts, r.ended_ts)) AS last, count(*) AS n,
           any_value(s.span_id) AS span_id, s.kind, any_value(s.name) AS name,
           count(*) FILTER (WHERE s.status = 'failed') AS failed, count(*) FILTER (WHERE s.status = 'running')
               AS running, count(*) FILTER (WHERE s.cache) AS cached,
           any_value(s.frame_parent_id) AS frame_parent_id, min(hash(s.frame_parent_id)) AS parent_lo,
           max(hash(s.frame_parent_id)) AS parent_hi, min(hash(s.name)) AS name_lo, max(hash(s.name)) AS name_hi
    FROM spans s JOIN keyed_runs k USING (trace_id) JOIN runs r USING (trace_id)
    WHERE s.trace_id IN (SELECT trace_id FROM {{traces}}) AND {shown("s")}
    GROUP BY ALL;
    INSERT INTO span_tiles_fine
    SELECT trace_id, depth, start_tile, end_tile, first, last, n, span_id, kind, name, failed, running, cached,
           CASE WHEN parent_lo = parent_hi THEN frame_parent_id END, name_lo = name_hi
    FROM fine_tiles ORDER BY trace_id, start_tile;
    INSERT INTO span_tiles
    SELECT trace_id, depth, floor(start_tile / {_PER_FINE})::BIGINT AS start_tile,
           floor(end_tile / {_PER_FINE})::BIGINT, min(first), max(last), sum(n), any_value(span_id), kind,
           any_value(name), sum(failed), sum(running), sum(cached),
           CASE WHEN min(parent_lo) = max(parent_hi) THEN any_value(frame_parent_id) END, min(name_lo) = max(name_hi)
    FROM fine_tiles
    GROUP BY ALL
    ORDER BY trace_id, start_tile;
    DROP TABLE fine_tiles;
"""

_BUILD = f"""
    INSERT INTO keyed_runs
    SELECT trace_id, nextval('keyed_run_ids'), started_ts, greatest(ended_ts - started_ts, 1e-3) / {TILES},
           last_event_id
    FROM runs WHERE trace_id IN (SELECT trace_id FROM {{traces}});
    INSERT INTO span_keys
    SELECT hash(s.trace_id, s.span_id) AS key, k.run, s.span_id, s.start_ts, s.start_event_id, s.frame_parent_id,
           s.kind NOT IN {HIDDEN_KINDS} AS shown
    FROM spans s JOIN keyed_runs k USING (trace_id)
    WHERE s.trace_id IN (SELECT trace_id FROM {{traces}}) AND NOT s.instant
    ORDER BY key;
    INSERT INTO frame_keys
    SELECT hash(s.trace_id, coalesce(s.frame_parent_id, '')) AS key, k.run, s.frame_parent_id, s.start_ts,
           s.start_event_id, s.span_id
    FROM spans s JOIN keyed_runs k USING (trace_id)
    WHERE s.trace_id IN (SELECT trace_id FROM {{traces}}) AND {shown("s")}
    ORDER BY key, s.start_ts, s.start_event_id;
    {span_search.BUILD}
    {span_failures.BUILD}
    INSERT INTO agent_generations
    SELECT hash(a.trace_id, a.call_id) AS key, k.run, a.call_id, g.name, g.end_ts, g.end_event_id
    FROM spans a JOIN spans g ON g.trace_id = a.trace_id AND g.parent_span_id = a.span_id
    JOIN keyed_runs k ON k.trace_id = a.trace_id
    WHERE a.trace_id IN (SELECT trace_id FROM {{traces}}) AND a.kind = 'agent' AND a.call_id IS NOT NULL
      AND g.kind = 'generation' AND g.end_event_id IS NOT NULL
    ORDER BY key;
    {_TILED}
"""

_FORGET = (
    span_search.FORGET
    + span_failures.FORGET
    + """
    DELETE FROM span_keys WHERE run IN (SELECT run FROM keyed_runs WHERE trace_id IN (SELECT trace_id FROM {traces}));
    DELETE FROM frame_keys WHERE run IN (SELECT run FROM keyed_runs WHERE trace_id IN (SELECT trace_id FROM {traces}));
    DELETE FROM agent_generations
    WHERE run IN (SELECT run FROM keyed_runs WHERE trace_id IN (SELECT trace_id FROM {traces}));
    DELETE FROM span_tiles WHERE trace_id IN (SELECT trace_id FROM {traces});
    DELETE FROM span_tiles_fine WHERE trace_id IN (SELECT trace_id FROM {traces});
    DELETE FROM keyed_runs WHERE trace_id IN (SELECT trace_id FROM {traces});
"""
)

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


def key_run(store: Store, trace_id: str) -> bool:
    """Make the keys of run `trace_id` as its spans are now, replacing older ones; False when a derive
    of it wrote meanwhile (then the next look makes them)."""
    return unless_raced(store, lambda conn: key_runs(conn, [trace_id]))


def key_runs(conn: duckdb.DuckDBPyConnection, trace_ids: Sequence[str], *, min_events: int = 0) -> None:
    """Make the keys of those of runs `trace_ids` that have `min_events` events or more, replacing older
    ones, in the caller's transaction: a load's, so that a big run it stores is keyed when it is seen."""
    conn.execute(
        "CREATE OR REPLACE TEMP TABLE keyed_now AS "
        f"SELECT trace_id FROM runs WHERE trace_id IN (SELECT unnest({list_param.of('traces')})) AND events >= $min",
        {"traces": list_param.texts(trace_ids), "min": min_events},
    )
    if conn.execute("SELECT count(*) FROM keyed_now").fetchall()[0][0]:
        conn.execute(_FORGET.format(traces="keyed_now"))
        conn.execute(_BUILD.format(traces="keyed_now"))
    conn.execute("DROP TABLE keyed_now")


def runs_to_key(store: Store, *, min_events: int) -> dict[str, int]:
    """Runs of at least `min_events` events whose keys are missing or older than the run: their last
    event id, by trace id (biggest first)."""
    return stale_runs(store, "keyed_runs", min_events=min_events)


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
    hashed = cursor.execute("SELECT hash(?, p) FROM unnest(?) AS t(p)", [trace_id, list(found)]).fetchall()
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
    rows = [] if run is None else cursor.execute(span_failures.NAMES, {"run": run, "ids": list(span_ids)}).fetchall()
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
    keys = [key for (key,) in cursor.execute("SELECT hash(?, c) FROM unnest(?) AS t(c)", [trace_id, wanted]).fetchall()]
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
