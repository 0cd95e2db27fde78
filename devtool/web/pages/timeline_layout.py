"""Drawing a timeline window: the store's bars as positioned rectangles, in lanes, with an axis.

The store answers a window with a bar per span wide enough to see and merged bars (one kind each)
for the rest; this module places them. Spans at the same depth can overlap in time (parallel
sub-agents, their turns and tool calls), so each depth row is split into lanes: a bar goes in the
lane of its frame parent when that lane is free there (so a sub-agent's generation and turns line up
under it), else in the first lane free at its start. Past `MAX_LANES` lanes, bars share the last one
(marked as overflowing: more run at once than a row shows). A bar is drawn at least `MIN_BAR_PX`
wide, so a cached call served in no time can still be seen and clicked, and drawn over the bars
around it; it holds its lane only where it starts, so it never pushes the span right after it (of
its own parent, or of another whose calls merged with it) into a lane of its own.

A selected span is outlined where it is drawn: its own bar, or the merged bar that holds it.
Everything here works on the bars already bounded by the store, never on a run's spans.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from devtool.store.queries import TimelineBar, TimelineWindow

LANE_HEIGHT = 18
ROW_GAP = 4
MAX_LANES = 16
MIN_BAR_PX = 4.0
LABEL_MIN_PX = 48
# Labels are elements too: with them capped, a drawing holds at most its bars + MAX_LABELS + the axis.
MAX_LABELS = 800
MAX_TICKS = 20
DAY_MS = 86_400_000


@dataclass(frozen=True)
class Selected:
    """The selected span, as the timeline needs it to find where it is drawn."""

    span_id: str
    row: int
    kind: str
    start_ms: float


@dataclass(frozen=True)
class Rect:
    """One bar, placed: a span (`span_id`) or a merged bucket of `count` spans of one kind."""

    x: float
    y: float
    width: float
    height: float
    row: int
    kind: str
    status: str
    span_id: str | None
    count: int
    start_ms: float
    end_ms: float
    name: str | None
    one_name: bool = True  # a merged bar: all its spans are called `name`
    cached: bool = False
    labelled: bool = False  # wide enough for a label, and within the drawing's label budget
    selected: bool = False  # it is, or holds, the selected span
    overflow: bool = False  # drawn over others: more spans at once than the row has lanes
    call: str | None = None  # an agent's `#n` and short props, telling parallel agents apart

    @property
    def merged(self) -> bool:
        return self.span_id is None

    @property
    def what(self) -> str:
        """What a merged bar holds: `3 × web_search`, or `12 turn spans` when their names differ."""
        if self.one_name and self.name:
            return f"{self.count} × {self.name}"
        return f"{self.count} {self.kind} spans"

    @property
    def label(self) -> str | None:
        """Text to write in the bar, when it is wide enough to hold some."""
        if not self.labelled:
            return None
        return self.what if self.merged else self.named

    @property
    def title(self) -> str:
        took = format_duration(self.end_ms - self.start_ms)
        cached = " · from the journal" if self.cached else ""
        crowded = " · drawn over others: more run at once than the row has lanes" if self.overflow else ""
        if self.merged:
            what = f"{self.what} ({self.kind})" if self.one_name and self.name else self.what
            return (
                f"{what}, each too short to draw at this zoom · {took} in all · {self.status}{cached}{crowded}"
                " · click: select the first, zoom in"
            )
        return f"{self.kind} {self.named or ''}".strip() + f" · {took} · {self.status}{cached}{crowded}"

    @property
    def named(self) -> str | None:
        """A span's name, an agent's with its `#n` and props (`researcher #1 · topic="rust"`)."""
        return f"{self.name} {self.call}" if self.call and self.name else self.name


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


def layout(
    window: TimelineWindow, *, width: int | None = None, now_ms: float | None = None, selected: Selected | None = None
) -> TimelineLayout:
    """Place `window`'s bars on `width` pixels (default: the window's own). Running bars grow to `now_ms`.

    The store may have bucketed the window coarser than the drawing (to bound the bars); a bar is
    drawn where its times fall, whatever bucket it came from.
    """
    width = width or window.width_px
    scale = width / max(window.end_ms - window.start_ms, 1e-9)
    rects: list[Rect] = []
    lane_of: dict[str, int] = {}  # a drawn span's lane, for its children to follow
    labels = 0
    y = 0.0
    for row in _rows(window.bars):
        lanes: list[float] = []  # right edge (true extent) of the last bar in each lane
        placed: list[Rect] = []
        for bar in row:
            end = max(bar.end_ms, now_ms) if (now_ms is not None and bar.running) else bar.end_ms
            x0 = max(0.0, (bar.start_ms - window.start_ms) * scale)
            x1 = min(float(width), (end - window.start_ms) * scale)
            lane, overflow = _lane(lanes, x0, lane_of.get(bar.parent_id) if bar.parent_id else None)
            # A bar too narrow to see holds its lane at its start only: a span starting right after it
            # (or a sibling's, when spans of several parents merged) takes that lane rather than open
            # one; the narrow bar is drawn over it, at least MIN_BAR_PX wide.
            lanes[lane] = max(lanes[lane], x1 if x1 - x0 >= MIN_BAR_PX else x0 + 0.01)
            if bar.span_id is not None:
                lane_of[bar.span_id] = lane
            drawn = max(x1 - x0, MIN_BAR_PX)
            labelled = drawn >= LABEL_MIN_PX and labels < MAX_LABELS
            labels += labelled
            placed.append(
                Rect(
                    x=round(min(x0, width - drawn) if drawn <= width else 0.0, 1),
                    y=y + lane * LANE_HEIGHT,
                    width=round(drawn, 1),
                    height=LANE_HEIGHT - 2,
                    row=bar.row,
                    kind=bar.kind,
                    status=bar.status,
                    span_id=bar.span_id,
                    count=bar.count,
                    start_ms=bar.start_ms,
                    end_ms=bar.end_ms,
                    name=bar.name,
                    one_name=bar.one_name,
                    cached=bar.cached > 0,
                    labelled=labelled,
                    selected=_holds(bar, selected),
                    overflow=overflow,
                )
            )
        # Widened bars are drawn last, over the span that starts right after them, so they stay visible.
        rects.extend(sorted(placed, key=lambda rect: rect.width <= MIN_BAR_PX))
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


def _lane(lanes: list[float], x0: float, wanted: int | None) -> tuple[int, bool]:
    """The lane for a bar starting at `x0` (its parent's, `wanted`, if free there), and whether it
    overflows (no lane free, none left to open). Opens lanes in `lanes` as needed."""
    if wanted is not None and wanted < MAX_LANES:
        lanes.extend([-math.inf] * (wanted + 1 - len(lanes)))
        if lanes[wanted] <= x0:
            return wanted, False
    free = next((i for i, edge in enumerate(lanes) if edge <= x0), None)
    if free is not None:
        return free, False
    if len(lanes) < MAX_LANES:
        lanes.append(-math.inf)
        return len(lanes) - 1, False
    return MAX_LANES - 1, True


def _holds(bar: TimelineBar, selected: Selected | None) -> bool:
    """Whether `bar` is the selected span, or a merged bar that holds it."""
    if selected is None:
        return False
    if bar.span_id is not None:
        return bar.span_id == selected.span_id
    return bar.row == selected.row and bar.kind == selected.kind and bar.start_ms <= selected.start_ms <= bar.end_ms


def _rows(bars: Sequence[TimelineBar]) -> list[list[TimelineBar]]:
    rows: dict[int, list[TimelineBar]] = {}
    for bar in bars:
        rows.setdefault(bar.row, []).append(bar)
    return [sorted(rows[row], key=lambda bar: (bar.start_ms, -bar.end_ms)) for row in sorted(rows)]


def ticks(start_ms: float, end_ms: float, width_px: int, *, origin_ms: float, target: int = 8) -> tuple[Tick, ...]:
    """About `target` round-numbered ticks across the window, labelled from the run's start.

    Each tick is counted from the origin, never stepped to, and there are at most `MAX_TICKS`: far
    from the origin a step can be below a float's resolution, where stepping would never arrive.
    """
    span = max(end_ms - start_ms, 1e-6)
    if not all(math.isfinite(value) for value in (span, start_ms - origin_ms, end_ms - origin_ms)):
        return ()
    raw = span / target
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)
    first = math.ceil((start_ms - origin_ms) / step)
    found = []
    for n in range(first, first + MAX_TICKS):
        offset = n * step
        if origin_ms + offset > end_ms:
            break
        # Clamped: rounding (or a resolution coarser than the step) can put a tick a hair outside.
        x = min(max((origin_ms + offset - start_ms) / span * width_px, 0.0), float(width_px))
        found.append(Tick(round(x, 1), "+" + format_duration(offset, step)))
    return tuple(found)


def format_duration(ms: float, resolution: float | None = None) -> str:
    """`850 µs`, `12.5 ms`, `3.20 s`, `2 min 05 s`, `3.5 d`: short, with the precision the resolution needs."""
    if not math.isfinite(ms):
        return "—"
    ms = max(ms, 0.0)
    if ms < 1:
        return f"{ms * 1000:.0f} µs"
    if ms < 1000:
        digits = 0 if ms >= 100 or (resolution is not None and resolution >= 1) else 1
        return f"{ms:.{digits}f} ms"
    if ms < 60_000:
        digits = 2 if resolution is None or resolution < 100 else (1 if resolution < 1000 else 0)
        return f"{ms / 1000:.{digits}f} s"
    if ms < DAY_MS:
        minutes, seconds = divmod(ms / 1000, 60)
        return f"{int(minutes)} min {int(seconds):02d} s"
    return f"{ms / DAY_MS:,.1f} d" if ms < 1e6 * DAY_MS else f"{ms / DAY_MS:.3g} d"
