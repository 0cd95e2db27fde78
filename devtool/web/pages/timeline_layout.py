"""Drawing a timeline window: the store's bars as positioned rectangles, in lanes, with an axis.

The store answers a window with at most one bar per (depth row, pixel); this module places them.
Spans at the same depth can overlap in time (parallel sub-agents, a tool batch), so each depth row
is split into lanes, greedily: a bar goes in the first lane whose last bar ends before it starts.
Everything here works on the bars already bounded by the store, never on a run's spans.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from devtool.store.queries import TimelineBar, TimelineWindow

LANE_HEIGHT = 18
ROW_GAP = 4
MAX_LANES = 6
LABEL_MIN_PX = 48
# Labels are elements too: with them capped, a drawing holds at most its bars + MAX_LABELS + the axis.
MAX_LABELS = 800


@dataclass(frozen=True)
class Rect:
    """One bar, placed: a span (`span_id`) or a merged bucket of `count` spans."""

    x: float
    y: float
    width: float
    height: float
    kind: str
    status: str
    span_id: str | None
    count: int
    start_ms: float
    end_ms: float
    name: str | None
    cached: bool = False
    labelled: bool = False  # wide enough for a label, and within the drawing's label budget

    @property
    def merged(self) -> bool:
        return self.span_id is None

    @property
    def label(self) -> str | None:
        """Text to write in the bar, when it is wide enough to hold some."""
        if not self.labelled:
            return None
        return f"{self.count} spans" if self.merged else self.name

    @property
    def title(self) -> str:
        what = f"{self.count} {self.kind} spans merged" if self.merged else f"{self.kind} {self.name or ''}".strip()
        cached = " · from the journal" if self.cached else ""
        return f"{what} · {format_duration(self.end_ms - self.start_ms)} · {self.status}{cached}"


@dataclass(frozen=True)
class Tick:
    x: float
    label: str


@dataclass(frozen=True)
class TimelineLayout:
    width: int
    height: int
    start_ms: float
    end_ms: float
    run_start_ms: float
    run_end_ms: float
    rects: tuple[Rect, ...]
    ticks: tuple[Tick, ...]
    spans: int

    @property
    def window_fraction(self) -> tuple[float, float]:
        """Where the window lies in the run, as fractions 0..1 (for the overview strip)."""
        total = max(self.run_end_ms - self.run_start_ms, 1e-9)
        return (
            max(0.0, (self.start_ms - self.run_start_ms) / total),
            min(1.0, (self.end_ms - self.run_start_ms) / total),
        )


def layout(window: TimelineWindow, *, width: int | None = None, now_ms: float | None = None) -> TimelineLayout:
    """Place `window`'s bars on `width` pixels (default: the window's own). Running bars grow to `now_ms`.

    The store may have bucketed the window coarser than the drawing (to bound the bars); a bar is
    drawn where its times fall, whatever bucket it came from.
    """
    width = width or window.width_px
    scale = width / max(window.end_ms - window.start_ms, 1e-9)
    rects: list[Rect] = []
    labels = 0
    y = 0.0
    for row in _rows(window.bars):
        lanes: list[float] = []  # right edge of the last bar in each lane
        placed: list[tuple[int, TimelineBar, float, float]] = []
        for bar in row:
            end = max(bar.end_ms, now_ms) if (now_ms is not None and bar.running) else bar.end_ms
            x0 = max(0.0, (bar.start_ms - window.start_ms) * scale)
            x1 = min(float(width), (end - window.start_ms) * scale)
            x1 = max(x1, x0 + 1.0)
            lane = next((i for i, edge in enumerate(lanes) if edge <= x0), None)
            if lane is None:
                lane = min(len(lanes), MAX_LANES - 1)
                if lane == len(lanes):
                    lanes.append(x1)
            lanes[lane] = max(lanes[lane], x1)
            placed.append((lane, bar, x0, x1))
        for lane, bar, x0, x1 in placed:
            labelled = x1 - x0 >= LABEL_MIN_PX and labels < MAX_LABELS
            labels += labelled
            rects.append(
                Rect(
                    x=round(x0, 1),
                    y=y + lane * LANE_HEIGHT,
                    width=round(x1 - x0, 1),
                    height=LANE_HEIGHT - 2,
                    kind=bar.kind,
                    status=bar.status,
                    span_id=bar.span_id,
                    count=bar.count,
                    start_ms=bar.start_ms,
                    end_ms=bar.end_ms,
                    name=bar.name,
                    cached=bar.cached > 0,
                    labelled=labelled,
                )
            )
        y += len(lanes) * LANE_HEIGHT + ROW_GAP
    return TimelineLayout(
        width=width,
        height=max(int(y), LANE_HEIGHT),
        start_ms=window.start_ms,
        end_ms=window.end_ms,
        run_start_ms=window.run_start_ms,
        run_end_ms=window.run_end_ms,
        rects=tuple(rects),
        ticks=ticks(window.start_ms, window.end_ms, width, origin_ms=window.run_start_ms),
        spans=window.spans,
    )


def _rows(bars: Sequence[TimelineBar]) -> list[list[TimelineBar]]:
    rows: dict[int, list[TimelineBar]] = {}
    for bar in bars:
        rows.setdefault(bar.row, []).append(bar)
    return [sorted(rows[row], key=lambda bar: (bar.start_ms, -bar.end_ms)) for row in sorted(rows)]


def ticks(start_ms: float, end_ms: float, width_px: int, *, origin_ms: float, target: int = 8) -> tuple[Tick, ...]:
    """About `target` round-numbered ticks across the window, labelled from the run's start."""
    span = max(end_ms - start_ms, 1e-6)
    raw = span / target
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)
    first = math.ceil((start_ms - origin_ms) / step) * step
    found = []
    offset = first
    while origin_ms + offset <= end_ms:
        x = (origin_ms + offset - start_ms) / span * width_px
        found.append(Tick(round(x, 1), "+" + format_duration(offset, step)))
        offset += step
    return tuple(found)


def format_duration(ms: float, resolution: float | None = None) -> str:
    """`850 µs`, `12.5 ms`, `3.20 s`, `2 min 05 s`: short, with the precision the resolution needs."""
    ms = max(ms, 0.0)
    if ms < 1:
        return f"{ms * 1000:.0f} µs"
    if ms < 1000:
        digits = 0 if ms >= 100 or (resolution is not None and resolution >= 1) else 1
        return f"{ms:.{digits}f} ms"
    if ms < 60_000:
        digits = 2 if resolution is None or resolution < 100 else (1 if resolution < 1000 else 0)
        return f"{ms / 1000:.{digits}f} s"
    minutes, seconds = divmod(ms / 1000, 60)
    return f"{int(minutes)} min {int(seconds):02d} s"
