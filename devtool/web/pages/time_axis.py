"""A time axis in percent of a pane, with long empty stretches cut out of it (a broken axis).

A process journal can sit still for hours between two bursts: a rewind applied the next day appends
its entries a day after the rest, and on one linear axis everything recorded before lands in the
first pixel. `broken` cuts such a gap out when it holds no entry and no invocation and takes most
of the time shown (`GAP_SHARE`), and marks where it was; every segment keeps a readable share of the
width. A zoomed window (times in the URL) is always `linear`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from devtool.web.pages.timeline_layout import format_duration, ticks

GAP_SHARE = 0.8  # a gap is cut when it is more than this share of the time the axis would show with it
MAX_BREAKS = 3
BREAK_WIDTH = 3.0  # percent of the pane a cut gap is drawn as
MIN_SEGMENT = 12.0  # percent of the pane every segment keeps, however short
# Percent of the pane a tick's label may take ("+11 min 08 s" is ~75 px of a 745 px chart at 1024):
# across a cut, the last tick before it gives way to the first after it, which names the jump.
MIN_TICK_GAP = 11.0


@dataclass(frozen=True)
class Segment:
    start_ms: float
    end_ms: float
    x0: float  # percent
    x1: float

    def x(self, t: float) -> float:
        return self.x0 + (t - self.start_ms) / max(self.end_ms - self.start_ms, 1e-9) * (self.x1 - self.x0)


@dataclass(frozen=True)
class Break:
    """A gap cut out of the axis: where it is drawn, and how long it was."""

    x: float
    width: float
    hidden_ms: float

    @property
    def label(self) -> str:
        return f"{format_duration(self.hidden_ms)} without entries"


@dataclass(frozen=True)
class Tick:
    x: float  # percent
    label: str


@dataclass(frozen=True)
class TimeAxis:
    segments: tuple[Segment, ...]
    breaks: tuple[Break, ...] = ()

    @classmethod
    def linear(cls, start_ms: float, end_ms: float) -> TimeAxis:
        return cls((Segment(start_ms, end_ms, 0.0, 100.0),))

    @property
    def start_ms(self) -> float:
        return self.segments[0].start_ms

    @property
    def end_ms(self) -> float:
        return self.segments[-1].end_ms

    @property
    def shown_ms(self) -> float:
        """The time the axis shows, the cut gaps left out."""
        return sum(segment.end_ms - segment.start_ms for segment in self.segments)

    def padded(self, pad_ms: float) -> TimeAxis:
        """The same axis reaching `pad_ms` further at both ends (the first and last marks not cut in half)."""
        segments = list(self.segments)
        segments[0] = replace(segments[0], start_ms=segments[0].start_ms - pad_ms)
        segments[-1] = replace(segments[-1], end_ms=segments[-1].end_ms + pad_ms)
        return TimeAxis(tuple(segments), self.breaks)

    def x(self, t: float) -> float:
        """Where instant `t` is, in percent; an instant inside a cut gap is placed on the gap."""
        for index, segment in enumerate(self.segments):
            if index > 0 and t < segment.start_ms:
                return round(segment.x0 - BREAK_WIDTH / 2, 4)
            if t <= segment.end_ms or index == len(self.segments) - 1:
                return round(segment.x(t), 4)
        raise AssertionError("unreachable: the last segment takes every later instant")

    def ticks(self, origin_ms: float) -> tuple[Tick, ...]:
        """Round-numbered ticks in each segment (as many as its width holds), labelled from `origin_ms`."""
        found: list[Tick] = []
        for segment in self.segments:
            width = segment.x1 - segment.x0
            target = max(1, round(8 * width / 100))
            first = True
            for tick in ticks(segment.start_ms, segment.end_ms, 100, origin_ms=origin_ms, target=target):
                x = segment.x0 + tick.x / 100 * width
                if segment.x0 <= x <= segment.x1:
                    while first and found and x - found[-1].x < MIN_TICK_GAP:
                        found.pop()
                    first = False
                    found.append(Tick(round(x, 4), tick.label))
        return tuple(found)


def broken(start_ms: float, end_ms: float, gaps: Sequence[tuple[float, float]]) -> TimeAxis:
    """An axis from `start_ms` to `end_ms` with the empty `gaps` (longest first) cut out where they
    take more than `GAP_SHARE` of what the axis shows; linear when none does."""
    cut: list[tuple[float, float]] = []
    shown = end_ms - start_ms
    for gap_start, gap_end in list(gaps)[:MAX_BREAKS]:
        length = gap_end - gap_start
        if start_ms <= gap_start < gap_end <= end_ms and length > GAP_SHARE * shown:
            cut.append((gap_start, gap_end))
            shown -= length
    if not cut:
        return TimeAxis.linear(start_ms, end_ms)
    cut.sort()
    bounds = [start_ms, *(t for gap in cut for t in gap), end_ms]
    spans = [(bounds[i], bounds[i + 1]) for i in range(0, len(bounds), 2)]
    room = 100.0 - BREAK_WIDTH * len(cut)
    total = sum(b - a for a, b in spans) or 1.0
    raw = [max((b - a) / total * room, MIN_SEGMENT) for a, b in spans]
    widths = [w * room / sum(raw) for w in raw]
    segments, breaks, x = [], [], 0.0
    for index, ((a, b), width) in enumerate(zip(spans, widths, strict=True)):
        segments.append(Segment(a, b, round(x, 4), round(x + width, 4)))
        x += width
        if index < len(cut):
            breaks.append(Break(round(x, 4), BREAK_WIDTH, cut[index][1] - cut[index][0]))
            x += BREAK_WIDTH
    return TimeAxis(tuple(segments), tuple(breaks))
