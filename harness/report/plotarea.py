"""One plot area of a report chart: data coordinates mapped onto a rectangle by two axes, the
marks drawn there (bars, histograms, box plots, lines, points, text), and the frame, ticks and
titles around them. A ``harness.report.svg.Chart`` holds one or more."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from harness.report.markup import (
    GRID,
    INK,
    LABEL_SIZE,
    TICK_SIZE,
    element,
    group,
    label,
    num,
    shorten,
    text_width,
)
from harness.report.scales import Axis


@dataclass(frozen=True)
class BoxStats:
    """What a box plot shows of one series (quartiles interpolated as numpy's default does)."""

    low: float  # lower whisker: the smallest value within 1.5 IQR below the first quartile
    q1: float
    median: float
    q3: float
    high: float  # upper whisker: the largest value within 1.5 IQR above the third quartile
    mean: float
    outliers: tuple[float, ...]


def box_stats(values: Iterable[float]) -> BoxStats:
    data = sorted(values)
    if not data:
        raise ValueError("a box plot needs at least one value")
    q1, median, q3 = (_quantile(data, p) for p in (0.25, 0.5, 0.75))
    reach = 1.5 * (q3 - q1)
    inside = [v for v in data if q1 - reach <= v <= q3 + reach]
    return BoxStats(
        low=min(inside[0], q1),
        q1=q1,
        median=median,
        q3=q3,
        high=max(inside[-1], q3),
        mean=math.fsum(data) / len(data),
        outliers=tuple(v for v in data if v < q1 - reach or v > q3 + reach),
    )


def _quantile(data: Sequence[float], p: float) -> float:
    at = (len(data) - 1) * p
    below = math.floor(at)
    above = min(below + 1, len(data) - 1)
    return data[below] + (at - below) * (data[above] - data[below])


class Plot:
    """A rectangle of a chart (``left``, ``top``, ``width``, ``height`` in px) in which data
    coordinates are placed by the ``x`` and ``y`` axes. Data outside the axes is clipped."""

    def __init__(
        self,
        clip_id: str,
        left: float,
        top: float,
        width: float,
        height: float,
        x: Axis,
        y: Axis,
        title: str = "",
    ) -> None:
        self.clip_id = clip_id
        self.left, self.top, self.width, self.height = left, top, width, height
        self.x, self.y, self.title = x, y, title
        self.items: list[str] = []
        self.labels: list[str] = []

    # -- coordinates

    def px(self, x: float) -> float:
        """The horizontal pixel of data ``x``."""
        return self.left + (x - self.x.lo) / (self.x.hi - self.x.lo) * self.width

    def py(self, y: float) -> float:
        """The vertical pixel of data ``y`` (up is larger)."""
        return self.top + self.height - (y - self.y.lo) / (self.y.hi - self.y.lo) * self.height

    def _rect(self, x0: float, y0: float, x1: float, y1: float, **style: object) -> str:
        left, right = sorted((self.px(x0), self.px(x1)))
        top, bottom = sorted((self.py(y0), self.py(y1)))
        return element("rect", x=left, y=top, width=right - left, height=bottom - top, **style)

    def _line(self, x0: float, y0: float, x1: float, y1: float, **style: object) -> str:
        return element(
            "line", x1=self.px(x0), y1=self.py(y0), x2=self.px(x1), y2=self.py(y1), **style
        )

    # -- marks

    def stacked_hbars(
        self,
        y: float,
        values: Sequence[float],
        colours: Sequence[str],
        name: str,
        thickness: float = 0.8,
    ) -> None:
        """One horizontal bar at ``y`` made of segments ``values`` laid end to end from 0; zero
        segments draw nothing."""
        parts, start = [], 0.0
        for value, colour in zip(values, colours, strict=True):
            if value > 0:
                parts.append(
                    self._rect(
                        start, y - thickness / 2, start + value, y + thickness / 2, fill=colour
                    )
                )
            start += max(0.0, value)
        self.items.append(group("hbar", parts, name))

    def bars(
        self,
        values: Sequence[float],
        colours: Sequence[str],
        width: float = 0.8,
        name: str | None = None,
    ) -> None:
        """Vertical bars from 0, bar ``i`` at category position ``i``."""
        parts = [
            self._rect(i - width / 2, 0.0, i + width / 2, value, fill=colour)
            for i, (value, colour) in enumerate(zip(values, colours, strict=True))
        ]
        self.items.append(group("bars", parts, name))

    def histogram(
        self,
        edges: Sequence[float],
        counts: Sequence[int],
        colour: str,
        name: str,
        opacity: float = 0.6,
    ) -> None:
        """Bins ``[edges[i], edges[i + 1]]`` of height ``counts[i]``; empty bins draw nothing."""
        parts = [
            self._rect(edges[i], 0.0, edges[i + 1], float(n), fill=colour, fill_opacity=opacity)
            for i, n in enumerate(counts)
            if n > 0
        ]
        self.items.append(group("histogram", parts, name))

    def box(self, x: float, stats: BoxStats, name: str, width: float = 0.5) -> None:
        """A box plot at ``x``: box from q1 to q3, median line, whiskers with caps, mean
        triangle and outlier circles (matplotlib's look)."""
        stroke = {"stroke": INK, "stroke_width": 1.0}
        half, cap = width / 2, width / 4
        parts = [
            self._rect(x - half, stats.q1, x + half, stats.q3, fill="none", class_="iqr", **stroke),
            self._line(x, stats.q1, x, stats.low, **stroke),
            self._line(x, stats.q3, x, stats.high, **stroke),
            self._line(x - cap, stats.low, x + cap, stats.low, **stroke),
            self._line(x - cap, stats.high, x + cap, stats.high, **stroke),
            self._line(
                x - half,
                stats.median,
                x + half,
                stats.median,
                stroke="#ff7f0e",
                stroke_width=1.5,
                class_="median",
            ),
        ]
        cx, cy = self.px(x), self.py(stats.mean)
        triangle = (
            f"{num(cx)},{num(cy - 4)} {num(cx - 4)},{num(cy + 3)} {num(cx + 4)},{num(cy + 3)}"
        )
        parts.append(element("polygon", points=triangle, fill="#2ca02c", class_="mean"))
        parts += [
            element(
                "circle", cx=cx, cy=self.py(v), r=3.0, fill="none", stroke=INK, class_="outlier"
            )
            for v in stats.outliers
        ]
        self.items.append(group("box", parts, name))

    def polyline(
        self, points: Sequence[tuple[float, float]], colour: str, name: str, markers: bool = True
    ) -> None:
        """A line through ``points`` with a dot at each."""
        coords = " ".join(f"{num(self.px(x))},{num(self.py(y))}" for x, y in points)
        parts = [element("polyline", points=coords, fill="none", stroke=colour, stroke_width=1.5)]
        if markers:
            parts += [
                element("circle", cx=self.px(x), cy=self.py(y), r=3.5, fill=colour)
                for x, y in points
            ]
        self.items.append(group("series", parts, name))

    def scatter(
        self, points: Sequence[tuple[float, float]], colours: Sequence[str], radius: float = 3.0
    ) -> None:
        """A dot per point, each in its own colour."""
        parts = [
            element("circle", cx=self.px(x), cy=self.py(y), r=radius, fill=colour)
            for (x, y), colour in zip(points, colours, strict=True)
        ]
        self.items.append(group("scatter", parts))

    def line(
        self, x0: float, y0: float, x1: float, y1: float, colour: str = "#999", width: float = 1.0
    ) -> None:
        """A straight reference line between two data points (e.g. the diagonal y = x)."""
        self.items.append(
            group("reference", [self._line(x0, y0, x1, y1, stroke=colour, stroke_width=width)])
        )

    def text(
        self, x: float, y: float, text: str, *, size: float = TICK_SIZE, anchor: str = "middle"
    ) -> None:
        """A label with its baseline at data ``(x, y)``."""
        # Kept out of the clipped marks: a value label above a full bar stays visible.
        self.labels.append(label(self.px(x), self.py(y), text, size=size, anchor=anchor))

    # -- drawing

    def bottom(self) -> float:
        """The lowest px that the plot's tick labels and axis title reach."""
        below = self.top + self.height + 6 + TICK_SIZE
        if self.x.slant and self.x.ticks:
            longest = max(text_width(t, TICK_SIZE) for _, t in self.x.ticks)
            below += min(longest, 160) * 0.5
        return below + (LABEL_SIZE + 8 if self.x.label else 0)

    def markup(self) -> str:
        """The grid, the clipped marks, then the frame, ticks and titles over them."""
        right, base = self.left + self.width, self.top + self.height
        out = ['<g class="plot">']
        grid = [
            element("line", x1=self.px(v), y1=self.top, x2=self.px(v), y2=base)
            for v, _ in self.x.ticks
            if self.x.grid
        ]
        grid += [
            element("line", x1=self.left, y1=self.py(v), x2=right, y2=self.py(v))
            for v, _ in self.y.ticks
            if self.y.grid
        ]
        if grid:
            out.append(f'<g stroke="{GRID}" stroke-width="1">' + "".join(grid) + "</g>")
        out.append(f'<g clip-path="url(#{self.clip_id})">' + "".join(self.items) + "</g>")
        out.append(
            element(
                "rect",
                x=self.left,
                y=self.top,
                width=self.width,
                height=self.height,
                fill="none",
                stroke=INK,
                stroke_width=1.0,
            )
        )
        ticks, names = [], []
        for v, text in self.x.ticks:
            x = self.px(v)
            ticks.append(element("line", x1=x, y1=base, x2=x, y2=base + 4))
            text = shorten(text, 160, TICK_SIZE)
            if self.x.slant:
                names.append(label(x + 3, base + 6 + TICK_SIZE, text, anchor="end", angle=-30))
            else:
                names.append(label(x, base + 6 + TICK_SIZE, text))
        for v, text in self.y.ticks:
            y = self.py(v)
            ticks.append(element("line", x1=self.left - 4, y1=y, x2=self.left, y2=y))
            fits = self.left - 10 if self.left > 40 else 40
            names.append(
                label(
                    self.left - 6,
                    y + TICK_SIZE * 0.35,
                    shorten(text, fits, TICK_SIZE),
                    anchor="end",
                )
            )
        out += self.labels
        out.append(f'<g stroke="{INK}" stroke-width="1">' + "".join(ticks) + "</g>")
        out.append('<g class="ticks">' + "".join(names) + "</g>")
        if self.x.label:
            out.append(
                label(
                    self.left + self.width / 2,
                    self.bottom() - 4,
                    shorten(self.x.label, self.width, LABEL_SIZE),
                    size=LABEL_SIZE,
                )
            )
        if self.y.label:
            widest = max((text_width(t, TICK_SIZE) for _, t in self.y.ticks), default=0)
            x = max(LABEL_SIZE, self.left - 12 - min(widest, self.left - 10) - 4)
            mid = self.top + self.height / 2
            out.append(
                label(
                    x,
                    mid,
                    shorten(self.y.label, self.height, LABEL_SIZE),
                    size=LABEL_SIZE,
                    angle=-90,
                )
            )
        if self.title:
            out.append(
                label(
                    self.left + self.width / 2,
                    self.top - 8,
                    shorten(self.title, self.width + 40, LABEL_SIZE + 1),
                    size=LABEL_SIZE + 1,
                )
            )
        out.append("</g>")
        return "".join(out)
