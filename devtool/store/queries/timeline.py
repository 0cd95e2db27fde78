"""The timeline window: what to draw of a run between two instants at a given width, whatever its size.

Rows are nesting depths (`spans.depth`); columns are the window's pixels. A span wide enough to see
(`MIN_PX` pixels or more at the window's scale) is a bar of its own, however many others run beside
it: parallel sub-agents are told apart (the layout gives them lanes). Spans narrower than that merge
with their neighbours of the same row and kind, per `MIN_PX` columns (level of detail, as Perfetto
does), into one counted bar from the earliest start to the latest end of what it holds: a merged bar
is one kind, and says how many spans it holds and whether they share one name (and which).

The answer never holds more bars than its budget (`max_bars`, else rows × width), for a run of a
hundred events or of a million: when the wide spans alone would pass it (a very dense window), every
span merges with its row and kind per column, the columns shared among the rows and their kinds (so
the budget holds as long as it leaves each row's kind one column). DuckDB does the bucketing, in one
scan of the spans; only the bars leave it.

The timeline draws what the frame tree shows: the spans it looks through (a prompt loop, a model
call: `span_sql.HIDDEN_KINDS`) are left out, and instants (budget updates, logs) unless asked for. A
running span (no end yet) reaches the run's last event.

A keyed run (`span_keys`: one loaded in bulk) seen so wide that a pixel spans 8 or more of its tiles
(a run cut in 16,384; in 65,536 for a window four times narrower, `span_tiles_fine`) is drawn from
its tiles rather than its spans: the spans of one row and kind that start in one tile and end in one
tile, counted once (`span_tiles`). A tile group is bucketed as a
span would be, by where it starts and how wide it is: an eighth of a pixel from its spans' own at
most, and the bars' first starts and last ends are the spans'. Only spans that start and end in the
same tiles (less than an eighth of a pixel apart at both ends) share a bar they would not share drawn
from spans. Ten million events drawn whole are then a hundred thousand tiles read, not millions of
spans, and a quarter of them two hundred thousand fine tiles, not a million and a half spans.
"""

from __future__ import annotations

from dataclasses import dataclass

from devtool.store import span_keys
from devtool.store.database import Store
from devtool.store.errors import NotFoundError
from devtool.store.queries.unended import unended
from devtool.store.span_sql import HIDDEN_KINDS

MAX_WIDTH = 16384
# Narrower than this (in pixels, at the window's scale) a span is too small to see on its own.
MIN_PX = 3


@dataclass(frozen=True, slots=True)
class TimelineBar:
    """One bar: a span (`count == 1`, `span_id` set) or `count` spans of one kind merged in one row."""

    row: int
    px: int  # the pixel column it starts in, 0 ≤ px < width
    start_ms: float
    end_ms: float
    count: int
    span_id: str | None
    kind: str
    name: str | None  # a merged bar's: one of its spans' names (`one_name`: all of them)
    # completed | failed | running (copying while its run is copied from the lake: `queries/unended.py`);
    # a merged bar is failed if any span is, else running (copying) if any is
    status: str
    failed: int
    running: int  # spans without their end here
    cached: int  # spans served from a snapshot's journal
    one_name: bool = True  # every span it holds has `name`
    parent_id: str | None = None  # the frame parent of the spans it holds (lanes follow it); None if several

    @property
    def merged(self) -> bool:
        return self.span_id is None


@dataclass(frozen=True, slots=True)
class TimelineWindow:
    trace_id: str
    start_ms: float
    end_ms: float
    width_px: int
    run_start_ms: float
    run_end_ms: float
    rows: int  # 1 + the deepest row among the bars
    spans: int  # spans the bars stand for
    bars: tuple[TimelineBar, ...]


# `fine`, from the spans: a bar per wide span, and per (row, kind, MIN_PX columns) for the narrow ones.
# A bar's names are told apart by hash: comparing the strings themselves costs a third of the query
# on a big run.
_FINE_SPANS = """
    visible AS (
        SELECT rowid AS row_id, span_id, frame_parent_id, depth, kind, name, status, cache, start_ts,
               coalesce(end_ts, $run_end) AS end_ts
        FROM spans
        WHERE trace_id = $trace AND start_ts <= $end AND coalesce(end_ts, $run_end) >= $start
          AND kind NOT IN {hidden} {instants}
    ),
    fine AS (
        -- A wide span is a group of its own (keyed by its row id, below 0); narrow ones group by column,
        -- on the window's scale but not clipped to it, so that those just before the window stay apart
        -- from those in it. (Grouping by parent too would keep sub-agents apart, at 3x the cost.)
        -- (Aliases differ from the columns: DuckDB would read `name` in `hash(name)` as the alias.)
        -- Columns are bounded only so a narrow window over a run of years stays within BIGINT.
        SELECT depth, kind, min(start_ts) AS first, max(end_ts) AS last, count(*) AS n,
               any_value(span_id) AS bar_span,
               CASE WHEN min(hash(frame_parent_id)) = max(hash(frame_parent_id))
                    THEN any_value(frame_parent_id) END AS parent,
               min(hash(name)) = max(hash(name)) AS one_name, any_value(name) AS bar_name,
               count(*) FILTER (WHERE status = 'failed') AS failed,
               count(*) FILTER (WHERE status = 'running') AS running,
               count(*) FILTER (WHERE cache) AS cached
        FROM visible
        GROUP BY depth, kind,
                 CASE WHEN (end_ts - start_ts) * $scale >= $min_px THEN -1 - row_id
                      ELSE floor(least(greatest((start_ts - $start) * $scale / $min_px, -1e18), 1e18))::BIGINT END
    )
"""

# The same from a keyed run's tiles (hidden kinds and instants are not among them): a tile group as
# wide as a wide span is a bar of its own, the others group by row, kind and MIN_PX columns.
_FINE_TILES = """
    fine AS (
        SELECT depth, kind, min(first) AS first, max(last) AS last, sum(n)::BIGINT AS n,
               any_value(span_id) AS bar_span,
               CASE WHEN min(hash(frame_parent_id)) = max(hash(frame_parent_id))
                    THEN any_value(frame_parent_id) END AS parent,
               bool_and(one_name) AND min(hash(name)) = max(hash(name)) AS one_name, any_value(name) AS bar_name,
               sum(failed)::BIGINT AS failed, sum(running)::BIGINT AS running, sum(cached)::BIGINT AS cached
        FROM {tiles}
        WHERE trace_id = $trace AND first <= $end AND last >= $start
        -- (Qualified: in GROUP BY, DuckDB would read `first` and `last` as the aliases.)
        GROUP BY depth, kind,
                 CASE WHEN ({tiles}.last - {tiles}.first) * $scale >= $min_px THEN -1 - rowid
                      ELSE floor(least(greatest(({tiles}.first - $start) * $scale / $min_px, -1e18), 1e18))::BIGINT
                 END
    )
"""

# One scan of `fine`'s source. If its groups pass the budget, they (not the spans again) merge per
# row, kind and column, with columns few enough that all (row, kind) pairs together stay within it.
_BARS = """
    WITH {fine},
    budget AS (
        SELECT coalesce($budget, (max(depth) + 1) * $width) AS bars, count(DISTINCT depth) AS rows FROM fine
    ),
    crowded AS (SELECT count(*) > (SELECT bars FROM budget) AS yes FROM fine),
    columns AS (
        SELECT depth, kind,
               greatest((SELECT bars FROM budget)
                        // ((SELECT rows FROM budget) * count(*) OVER (PARTITION BY depth)), 1) AS c
        FROM (SELECT DISTINCT depth, kind FROM fine WHERE (SELECT yes FROM crowded))
    ),
    bars AS (
        SELECT * FROM fine WHERE NOT (SELECT yes FROM crowded)
        UNION ALL
        SELECT f.depth, f.kind, min(f.first), max(f.last), sum(f.n)::BIGINT, NULL, NULL,
               bool_and(f.one_name) AND min(hash(f.bar_name)) = max(hash(f.bar_name)), any_value(f.bar_name),
               sum(f.failed)::BIGINT, sum(f.running)::BIGINT, sum(f.cached)::BIGINT
        FROM fine f JOIN columns USING (depth, kind)
        GROUP BY f.depth, f.kind,
                 floor(least(greatest((f.first - $start) * $scale, 0), $width - 1) / $width * columns.c)
    )
    SELECT depth, least(greatest(floor((first - $start) * $scale), 0), $width - 1)::INTEGER,
           first, last, n, CASE WHEN n = 1 THEN bar_span END, kind, bar_name,
           CASE WHEN failed > 0 THEN 'failed' WHEN running > 0 THEN $unended ELSE 'completed' END,
           failed, running, cached, one_name, parent
    FROM bars
    ORDER BY depth, first, last DESC
"""

# A pixel this many tiles wide or more is drawn from tiles.
_TILES_PER_PIXEL = 8


def timeline_window(
    store: Store,
    trace_id: str,
    *,
    start_ms: float | None = None,
    end_ms: float | None = None,
    width_px: int = 1600,
    instants: bool = False,
    max_bars: int | None = None,
) -> TimelineWindow:
    """The bars of run `trace_id` between `start_ms` and `end_ms` (default: the whole run) at `width_px`.

    At most `max_bars` bars (default: rows × width), however crowded the window: a drawing with an
    element budget asks once, whatever the run.
    """
    if not 1 <= width_px <= MAX_WIDTH:
        raise ValueError(f"width_px must be between 1 and {MAX_WIDTH}, not {width_px}")
    with store.reader() as cursor:
        found = cursor.execute("SELECT started_ts, ended_ts FROM runs WHERE trace_id = ?", [trace_id]).fetchall()
        if not found:
            raise NotFoundError(f"no run {trace_id!r} in the store")
        run_start, run_end = found[0]
        start = run_start if start_ms is None else float(start_ms)
        end = run_end if end_ms is None else float(end_ms)
        if end < start:
            raise ValueError(f"the window ends ({end}) before it starts ({start})")
        span = max(end - start, 1e-3)  # a run of one instant still gets a window
        params: dict[str, object] = {
            "trace": trace_id,
            "start": start,
            "end": end,
            "scale": width_px / span,
            "width": width_px,
            "min_px": MIN_PX,
            "budget": max_bars,
            "unended": unended(store, cursor, trace_id),
        }
        tiled = None if instants else span_keys.tiles(cursor, trace_id)
        fine_width = None if tiled is None else tiled.width * span_keys.TILES / span_keys.FINE_TILES
        if tiled is not None and span / width_px >= _TILES_PER_PIXEL * tiled.width:
            sql = _BARS.format(fine=_FINE_TILES.format(tiles="span_tiles"))
        elif fine_width is not None and span / width_px >= _TILES_PER_PIXEL * fine_width:
            sql = _BARS.format(fine=_FINE_TILES.format(tiles="span_tiles_fine"))
        else:
            params["run_end"] = run_end
            fine = _FINE_SPANS.format(hidden=HIDDEN_KINDS, instants="" if instants else "AND NOT instant")
            sql = _BARS.format(fine=fine)
        rows = cursor.execute(sql, params).fetchall()
    bars = tuple(TimelineBar(*row) for row in rows)
    return TimelineWindow(
        trace_id,
        start,
        end,
        width_px,
        run_start,
        run_end,
        rows=1 + max((bar.row for bar in bars), default=-1),
        spans=sum(bar.count for bar in bars),
        bars=bars,
    )
