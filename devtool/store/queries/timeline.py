"""The timeline window: what to draw of a run between two instants at a given width, whatever its size.

Rows are nesting depths (`spans.depth`); columns are the window's pixels. Every span that overlaps the
window falls in the pixel where it starts (spans that start before the window in pixel 0). A span
at least a pixel wide in the window is a bar of its own, in one of `SLOTS` slots of its (row, pixel)
bucket; what is narrower than a pixel (and wide spans beyond the slots) merges into one counted bar
from the earliest start to the latest end of the spans it holds (level of detail, as Perfetto
does). Keeping wide spans apart matters: three parallel agents that began before the window are
three bars, not one "3 spans" bar. The answer never holds more than rows × width × (SLOTS + 1)
bars, for a run of a hundred events or of a million; DuckDB does the bucketing, only bars leave it.

Instant events (budget updates, logs) are left out unless asked for. A running span (no end yet)
reaches the run's last event.
"""

from __future__ import annotations

from dataclasses import dataclass

from devtool.store.database import Store
from devtool.store.errors import NotFoundError

MAX_WIDTH = 16384
# Wide spans drawn apart per (row, pixel); more overlapping there than this merge with the narrow ones.
SLOTS = 8


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


_BARS = """
    WITH visible AS (
        SELECT span_id, depth, kind, name, status, cache, start_ts, coalesce(end_ts, $run_end) AS end_ts
        FROM spans
        WHERE trace_id = $trace AND start_ts <= $end AND coalesce(end_ts, $run_end) >= $start {instants}
    ),
    placed AS (
        SELECT *, least(greatest(floor((start_ts - $start) * $scale), 0), $width - 1)::INTEGER AS px,
               (least(end_ts, $end) - greatest(start_ts, $start)) * $scale >= 1 AS wide
        FROM visible
    ),
    slotted AS (
        SELECT *, CASE WHEN wide AND row_number() OVER (
                      PARTITION BY depth, px, wide ORDER BY end_ts DESC, span_id) <= $slots
                  THEN row_number() OVER (PARTITION BY depth, px, wide ORDER BY end_ts DESC, span_id)
                  ELSE 0 END AS slot
        FROM placed
    )
    SELECT depth, px, first, last, n, span_id, kind, name,
           CASE WHEN failed > 0 THEN 'failed' WHEN running > 0 THEN 'running' ELSE 'completed' END,
           failed, running, cached
    FROM (
        SELECT depth, px, min(start_ts) AS first, max(end_ts) AS last, count(*) AS n,
               CASE WHEN count(*) = 1 THEN any_value(span_id) END AS span_id,
               min(kind) AS kind,
               CASE WHEN count(*) = 1 THEN any_value(name) END AS name,
               count(*) FILTER (WHERE status = 'failed') AS failed,
               count(*) FILTER (WHERE status = 'running') AS running,
               count(*) FILTER (WHERE cache) AS cached
        FROM slotted
        GROUP BY depth, px, slot
    )
    ORDER BY depth, px, first
"""


def timeline_window(
    store: Store,
    trace_id: str,
    *,
    start_ms: float | None = None,
    end_ms: float | None = None,
    width_px: int = 1600,
    instants: bool = False,
) -> TimelineWindow:
    """The bars of run `trace_id` between `start_ms` and `end_ms` (default: the whole run) at `width_px`."""
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
        rows = cursor.execute(
            _BARS.format(instants="" if instants else "AND NOT instant"),
            {
                "trace": trace_id,
                "start": start,
                "end": end,
                "run_end": run_end,
                "scale": width_px / span,
                "width": width_px,
                "slots": SLOTS,
            },
        ).fetchall()
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
