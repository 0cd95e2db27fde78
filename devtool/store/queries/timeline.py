"""The timeline window: what to draw of a run between two instants at a given width, whatever its size.

Rows are nesting depths (`spans.depth`); columns are the window's pixels. A span falls in the pixel
where it starts and the pixel where it ends, counted on the window's scale even outside it, and the
spans of a row that share both become one bar: the span itself when it is alone there, else one
counted bar from the earliest start to the latest end of the spans it holds (drawn from pixel 0
when it began before the window). Spans narrower than a pixel thus merge per row and pixel (level
of detail, as Perfetto does), while spans that merely start together (parallel sub-agents fanned out
at once) or that cover the whole window stay apart as soon as a pixel tells them apart, so zooming
in always separates them.

The answer never holds more than rows × width bars, for a run of a hundred events or of a million:
when keeping ends apart would give more (a dense run seen whole), the bars merge by start pixel
alone. DuckDB does the bucketing, in one scan of the spans; only the bars leave it.

Instant events (budget updates, logs) are left out unless asked for. A running span (no end yet)
reaches the run's last event.

A keyed run (`span_keys`: one loaded in bulk) seen so wide that a pixel spans 8 or more of its tiles
(a run cut in 16,384) is drawn from its tiles rather than its spans: the spans of one row that start
in one tile and end in one tile, counted once. Such a span falls in the pixel where its tile starts:
an eighth of a pixel from its own at most, and the bars' first starts and last ends are the spans'.
Ten million events drawn whole are then a few hundred thousand tiles read, not millions of spans.
"""

from __future__ import annotations

from dataclasses import dataclass

from devtool.store import span_keys
from devtool.store.database import Store
from devtool.store.errors import NotFoundError

MAX_WIDTH = 16384


@dataclass(frozen=True, slots=True)
class TimelineBar:
    """One bar: a span (`count == 1`, `span_id` set) or `count` spans merged in one pixel of one row."""

    row: int
    px: int  # the pixel column it starts in, 0 ≤ px < width
    start_ms: float
    end_ms: float
    count: int
    span_id: str | None
    kind: str  # the span's kind; for a merged bar, the first (alphabetically) of its kinds
    name: str | None
    status: str  # completed | failed | running; a merged bar is failed if any span is, else running if any is
    failed: int
    running: int
    cached: int  # spans served from a snapshot's journal


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


# Spans grouped by (row, start pixel, end pixel): `fine`.
_FINE_SPANS = """
    visible AS (
        SELECT span_id, depth, kind, name, status, cache, start_ts, coalesce(end_ts, $run_end) AS end_ts
        FROM spans
        WHERE trace_id = $trace AND start_ts <= $end AND coalesce(end_ts, $run_end) >= $start {instants}
    ),
    fine AS (
        -- Pixels on the window's scale but not clipped to it: spans that began before the window
        -- (or end after it) at different times stay apart, as they would be drawn zoomed out.
        SELECT depth,
               floor((start_ts - $start) * $scale)::BIGINT AS start_px,
               floor((end_ts - $start) * $scale)::BIGINT AS end_px,
               min(start_ts) AS first, max(end_ts) AS last, count(*) AS n,
               any_value(span_id) AS span_id, min(kind) AS kind, any_value(name) AS name,
               count(*) FILTER (WHERE status = 'failed') AS failed,
               count(*) FILTER (WHERE status = 'running') AS running,
               count(*) FILTER (WHERE cache) AS cached
        FROM visible
        GROUP BY ALL
    )
"""

# The same from a keyed run's tiles: each falls in the pixels where its start and end tiles begin.
_FINE_TILES = """
    fine AS (
        SELECT depth,
               floor(($origin + start_tile * $tile - $start) * $scale)::BIGINT AS start_px,
               floor(($origin + end_tile * $tile - $start) * $scale)::BIGINT AS end_px,
               min(first) AS first, max(last) AS last, sum(n)::BIGINT AS n,
               any_value(span_id) AS span_id, min(kind) AS kind, any_value(name) AS name,
               sum(failed)::BIGINT AS failed, sum(running)::BIGINT AS running, sum(cached)::BIGINT AS cached
        FROM span_tiles
        WHERE trace_id = $trace AND first <= $end AND last >= $start
        GROUP BY ALL
    )
"""

# The groups become bars; if that gives more than rows × width bars (a dense run seen whole), the
# groups (not the spans again) merge by (row, start pixel) alone.
_BARS = """
    WITH {fine},
    placed AS (SELECT *, least(greatest(start_px, 0), $width - 1)::INTEGER AS px FROM fine),
    crowded AS (SELECT count(*) > (max(depth) + 1) * $width AS yes FROM fine),
    bars AS (
        SELECT depth, px, first, last, n, span_id, kind, name, failed, running, cached
        FROM placed WHERE NOT (SELECT yes FROM crowded)
        UNION ALL
        SELECT depth, px, min(first), max(last), sum(n)::BIGINT, any_value(span_id), min(kind), any_value(name),
               sum(failed)::BIGINT, sum(running)::BIGINT, sum(cached)::BIGINT
        FROM placed WHERE (SELECT yes FROM crowded)
        GROUP BY depth, px
    )
    SELECT depth, px, first, last, n,
           CASE WHEN n = 1 THEN span_id END, kind, CASE WHEN n = 1 THEN name END,
           CASE WHEN failed > 0 THEN 'failed' WHEN running > 0 THEN 'running' ELSE 'completed' END,
           failed, running, cached
    FROM bars
    ORDER BY depth, px, first
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

    With `max_bars`, the window is bucketed into fewer columns when rows × width would pass it (the
    answer's `width_px` says how many): a drawing with an element budget asks once, whatever the run.
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
        if max_bars is not None:
            deepest_in_run = cursor.execute("SELECT depth FROM runs WHERE trace_id = ?", [trace_id]).fetchall()[0][0]
            width_px = max(1, min(width_px, max_bars // (deepest_in_run + 1)))
        params: dict[str, object] = {"trace": trace_id, "start": start, "end": end, "scale": width_px / span}
        params["width"] = width_px
        tiled = None if instants else span_keys.tiles(cursor, trace_id)
        if tiled is not None and span / width_px >= _TILES_PER_PIXEL * tiled.width:
            params.update(origin=tiled.origin, tile=tiled.width)
            sql = _BARS.format(fine=_FINE_TILES)
        else:
            params["run_end"] = run_end
            sql = _BARS.format(fine=_FINE_SPANS.format(instants="" if instants else "AND NOT instant"))
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
