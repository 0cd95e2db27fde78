"""Making a big run's span keys (what `span_keys` reads): its keys, span search, failures, generations
and timeline tiles, written in one pass over its spans.

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

from collections.abc import Sequence
from typing import TYPE_CHECKING

import duckdb

from devtool.store import list_param, span_failures, span_search
from devtool.store.run_caches import stale_runs
from devtool.store.span_keys import FINE_TILES, TILES
from devtool.store.span_sql import HIDDEN_KINDS, shown
from devtool.store.transactions import unless_raced

if TYPE_CHECKING:
    from devtool.store.database import Store

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
        {"traces": list_param.values(trace_ids), "min": min_events},
    )
    if conn.execute("SELECT count(*) FROM keyed_now").fetchall()[0][0]:
        conn.execute(_FORGET.format(traces="keyed_now"))
        conn.execute(_BUILD.format(traces="keyed_now"))
    conn.execute("DROP TABLE keyed_now")


def runs_to_key(store: Store, *, min_events: int) -> dict[str, int]:
    """Runs of at least `min_events` events whose keys are missing or older than the run: their last
    event id, by trace id (biggest first)."""
    return stale_runs(store, "keyed_runs", min_events=min_events)
