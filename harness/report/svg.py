"""A tiny SVG chart toolkit for the HTML reports (standard library only).

A ``Chart`` is the canvas: a title, legends, and one or more ``Plot`` areas. A plot maps data
coordinates onto its rectangle through two ``Axis`` objects (linear, categorical or time) and
draws bars, histogram bins, box plots, polylines, points, lines and text in those coordinates.
``Chart.svg()`` returns the markup and ``Chart.data_uri()`` a ``data:image/svg+xml`` URI for an
``<img>``.

Every text is escaped (suite names and labels come from user data). The output is
deterministic (numbers rounded to 2 decimals, ids are counters, no clock), so the same input
gives the same bytes. There are no font metrics: text widths are estimated from character counts,
which is good enough for laying out axis labels and legends.
"""

from __future__ import annotations

import base64
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"
TITLE_SIZE = 15
LABEL_SIZE = 13
TICK_SIZE = 11
CHAR_WIDTH = 0.6  # average glyph width per unit of font size (an estimate for layout only)
INK = "#333"
GRID = "#e8e8e8"

# Characters that XML 1.0 does not allow, even escaped (control characters, lone surrogates).
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def escape(text: object) -> str:
    """``text`` as SVG character data or a quoted attribute value."""
    clean = _NOT_XML.sub("\ufffd", str(text))
    return (
        clean.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&#39;")
    )


def num(value: float) -> str:
    """A coordinate with at most 2 decimals and no trailing zeros (compact and deterministic)."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def text_width(text: str, size: float) -> float:
    """Estimated width in px of ``text`` at font ``size``."""
    return len(text) * size * CHAR_WIDTH


def shorten(text: str, width: float, size: float) -> str:
    """``text`` cut (with an ellipsis) to fit about ``width`` px at font ``size``."""
    fits = max(1, int(width / (size * CHAR_WIDTH)))
    return text if len(text) <= fits else text[: max(0, fits - 1)] + "…"


# -- scales ------------------------------------------------------------------------------------


def nice_ticks(lo: float, hi: float, max_ticks: int = 8, integer: bool = False) -> list[float]:
    """Round tick values (steps of 1, 2, 2.5 or 5 times a power of ten) covering ``[lo, hi]``.

    The ticks increase, the first is <= ``lo`` and the last >= ``hi``, and there are at least 2
    and at most ``max_ticks`` (3 or more) of them. ``integer`` keeps the step a whole number (for counts).
    """
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ValueError(f"cannot make ticks for a range with {lo!r} and {hi!r}")
    lo, hi = min(lo, hi), max(lo, hi)
    scale = max(abs(lo), abs(hi))
    # An empty (or float-noise) range gets some room, so that steps stay well above rounding.
    if hi - lo <= max(scale * 1e-6, 1e-12):
        pad = scale * 0.1 if scale > 1e-9 else 1.0
        lo, hi = lo - pad, hi + pad
    # Two ticks cannot cover a range around 0 (that takes -s, 0, s); three always can.
    max_ticks = max(3, max_ticks)
    exponent = math.floor(math.log10((hi - lo) / (max_ticks - 1)))
    while True:
        for mantissa in (1.0, 2.0, 2.5, 5.0):
            step = mantissa * 10.0**exponent
            if integer and (step < 1 or step % 1):
                continue
            ticks = _cover(lo, hi, step)
            if len(ticks) <= max_ticks:
                return ticks
        exponent += 1


def _cover(lo: float, hi: float, step: float) -> list[float]:
    # Rounding to the step's decimals removes float noise (0.30000000000000004 -> 0.3); the
    # loops then check coverage on the rounded values themselves.
    digits = max(0, 1 - math.floor(math.log10(step)))

    def tick(k: int) -> float:
        return round(k * step, digits)

    first, last = math.floor(lo / step), math.ceil(hi / step)
    while tick(first) > lo:
        first -= 1
    while tick(last) < hi:
        last += 1
    return [tick(k) for k in range(first, last + 1)]


def tick_label(value: float, step: float) -> str:
    """``value`` with the decimals that the tick ``step`` has (step 0.25: "0.75", step 2: "4")."""
    if step < 1e-6 or abs(value) >= 1e9:
        return f"{value:.6g}"
    decimals = len(f"{step:.8f}".rstrip("0").split(".")[1])
    text = f"{value:.{decimals}f}"
    return "0" if float(text) == 0 else text  # never "-0.0"


# Time steps in seconds below a month; months and years step through the calendar.
_SECOND_STEPS = [60 * m for m in (1, 2, 5, 10, 15, 30)] + [3600 * h for h in (1, 2, 3, 6, 12)]
_DAY_STEPS = [86400 * d for d in (1, 2, 7, 14)]
_MONTH_STEPS = (1, 2, 3, 6)
_YEAR_STEPS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000)
_EARLIEST = datetime(1, 1, 2, tzinfo=timezone.utc).timestamp()
_LATEST = datetime(9999, 12, 30, tzinfo=timezone.utc).timestamp()


def time_range(lo: float, hi: float, min_span: float = 3600.0) -> tuple[float, float]:
    """A padded axis range (POSIX seconds) around data from ``lo`` to ``hi``: at least an hour,
    plus 5% either side, so that single points and close runs still get readable ticks."""
    lo, hi = min(lo, hi), max(lo, hi)
    if hi - lo < min_span:
        mid = (lo + hi) / 2
        lo, hi = mid - min_span / 2, mid + min_span / 2
    pad = (hi - lo) * 0.05
    return max(_EARLIEST, lo - pad), min(_LATEST, hi + pad)


def time_ticks(lo: float, hi: float, max_ticks: int = 7) -> list[tuple[float, str]]:
    """Ticks ``(POSIX seconds, label)`` inside ``[lo, hi]`` at round UTC times: the finest step
    (minutes through years) that gives at most ``max_ticks`` of them. Labels show the precision
    of the step: "01-02 12:00" below a day, "2026-01-02", "2026-01", or "2026"."""
    for step in _SECOND_STEPS + _DAY_STEPS:
        first = math.ceil(lo / step)
        count = math.floor(hi / step) - first + 1
        if count <= max_ticks:
            fmt = "%m-%d %H:%M" if step < 86400 else "%Y-%m-%d"
            return [
                (t, _utc(t).strftime(fmt)) for t in (k * step for k in range(first, first + count))
            ]
    start, end = _utc(lo), _utc(hi)
    months = (end.year - start.year) * 12 + end.month - start.month
    for step in _MONTH_STEPS:
        if months // step + 1 <= max_ticks:
            return _calendar_ticks(
                lo, hi, [(y, m) for y, m in _months(start, end) if (m - 1) % step == 0], "%Y-%m"
            )
    for step in _YEAR_STEPS:
        if (end.year - start.year) // step + 1 <= max_ticks:
            years = [(y, 1) for y in range(start.year, end.year + 1) if y % step == 0]
            return _calendar_ticks(lo, hi, years, "%Y")
    return []


def _utc(seconds: float) -> datetime:
    return datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(seconds=seconds)


def _months(start: datetime, end: datetime) -> Iterable[tuple[int, int]]:
    year, month = start.year, start.month
    while (year, month) <= (end.year, end.month):
        yield year, month
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)


def _calendar_ticks(
    lo: float, hi: float, starts: Iterable[tuple[int, int]], fmt: str
) -> list[tuple[float, str]]:
    out = []
    for year, month in starts:
        when = datetime(year, month, 1, tzinfo=timezone.utc)
        seconds = when.timestamp()
        if lo <= seconds <= hi:
            out.append((seconds, when.strftime(fmt)))
    return out


@dataclass(frozen=True)
class Axis:
    """One axis of a plot: its data range, its ticks as ``(value, label)``, and its title."""

    lo: float
    hi: float
    ticks: tuple[tuple[float, str], ...] = ()
    label: str = ""
    slant: bool = False  # tick labels at 30 degrees (long category names, dates)
    grid: bool = False  # light lines across the plot at each tick

    @classmethod
    def linear(
        cls,
        lo: float,
        hi: float,
        label: str = "",
        *,
        integer: bool = False,
        pad: float = 0.0,
        grid: bool = True,
    ) -> Axis:
        """Nice ticks covering ``[lo, hi]``; the range is the outer ticks, or the data plus
        ``pad`` (a fraction of it) either side, when ``pad`` is given."""
        lo, hi = min(lo, hi), max(lo, hi)
        ticks = nice_ticks(lo, hi, integer=integer)
        step = ticks[1] - ticks[0]
        if pad and hi > lo:
            lo, hi = lo - pad * (hi - lo), hi + pad * (hi - lo)
        else:  # a single value gets the room that its ticks made around it
            lo, hi = ticks[0], ticks[-1]
        slack = step * 1e-9  # float noise must not drop a tick at the very edge
        shown = tuple((t, tick_label(t, step)) for t in ticks if lo - slack <= t <= hi + slack)
        return cls(lo, hi, shown, label, grid=grid)

    @classmethod
    def categories(cls, names: Sequence[str], label: str = "", *, slant: bool = False) -> Axis:
        """Category ``i`` at position ``i``, each with a band of width 1 around it."""
        ticks = tuple((float(i), name) for i, name in enumerate(names))
        return cls(-0.5, len(names) - 0.5, ticks, label, slant=slant)

    @classmethod
    def time(cls, lo: float, hi: float, label: str = "") -> Axis:
        """A time axis over POSIX seconds ``lo`` to ``hi``, with date labels."""
        lo, hi = time_range(lo, hi)
        return cls(lo, hi, tuple(time_ticks(lo, hi)), label, slant=True, grid=True)


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


def _attrs(**attrs: object) -> str:
    # Keyword names use "_" for "-" (stroke_width -> stroke-width); None leaves one out.
    return "".join(
        f' {k.rstrip("_").replace("_", "-")}="{num(v) if isinstance(v, float) else escape(v)}"'
        for k, v in attrs.items()
        if v is not None
    )


def element(tag: str, text: str | None = None, /, **attrs: object) -> str:
    """One SVG element; ``text`` (escaped here) becomes its content."""
    if text is None:
        return f"<{tag}{_attrs(**attrs)}/>"
    return f"<{tag}{_attrs(**attrs)}>{escape(text)}</{tag}>"


def label(
    x: float,
    y: float,
    text: str,
    *,
    size: float = TICK_SIZE,
    anchor: str = "middle",
    angle: float = 0.0,
    colour: str | None = None,
    bold: bool = False,
) -> str:
    """A text at ``(x, y)`` px (its baseline), optionally turned ``angle`` degrees about that point."""
    return element(
        "text",
        text,
        x=float(x),
        y=float(y),
        font_size=None if size == TICK_SIZE else float(size),
        text_anchor=None if anchor == "start" else anchor,
        transform=f"rotate({num(angle)} {num(x)} {num(y)})" if angle else None,
        fill=colour,
        font_weight="bold" if bold else None,
    )


def group(kind: str, parts: Iterable[str], name: str | None = None) -> str:
    """Elements of one kind (``class``), for one named series (``aria-label``) if given."""
    return f"<g{_attrs(class_=kind, aria_label=name)}>" + "".join(parts) + "</g>"


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


class Chart:
    """An SVG canvas ``width`` px wide: a title, legends and plots. Its height is what its
    content reaches, unless ``height`` is given."""

    def __init__(self, width: float, title: str = "", height: float | None = None) -> None:
        self.width, self.title, self.height = width, title, height
        self.plots: list[Plot] = []
        self.items: list[str] = []
        self.reach = 0.0  # the lowest px drawn so far outside plots
        if title:
            self.items.append(
                label(
                    width / 2,
                    8 + TITLE_SIZE,
                    shorten(title, width - 20, TITLE_SIZE),
                    size=TITLE_SIZE,
                    bold=True,
                )
            )
            self.reach = 8 + TITLE_SIZE + 6

    def plot(
        self,
        left: float,
        top: float,
        width: float,
        height: float,
        x: Axis,
        y: Axis,
        title: str = "",
    ) -> Plot:
        """A new plot area (px) with data coordinates given by ``x`` and ``y``."""
        plot = Plot(f"clip{len(self.plots)}", left, top, width, height, x, y, title)
        self.plots.append(plot)
        return plot

    def legend(
        self,
        left: float,
        top: float,
        width: float,
        entries: Sequence[tuple[str, str]],
        marker: str = "box",
    ) -> float:
        """Entries ``(name, colour)`` in rows from ``(left, top)``, wrapping at ``width`` px;
        ``marker`` "box" (bars) or "line" (lines with dots). Returns the height used."""
        parts, x, y = [], left, top
        row = TICK_SIZE + 7
        for name, colour in entries:
            name = shorten(name, 200, TICK_SIZE)
            span = 18 + text_width(name, TICK_SIZE) + 14
            if x > left and x + span > left + width:
                x, y = left, y + row
            if marker == "line":
                parts.append(
                    element(
                        "line",
                        x1=float(x),
                        y1=y + 6.0,
                        x2=x + 14.0,
                        y2=y + 6.0,
                        stroke=colour,
                        stroke_width=1.5,
                    )
                )
                parts.append(element("circle", cx=x + 7.0, cy=y + 6.0, r=3.0, fill=colour))
            else:
                parts.append(
                    element("rect", x=float(x), y=float(y), width=12.0, height=12.0, fill=colour)
                )
            parts.append(label(x + 18, y + 10, name, anchor="start"))
            x += span
        self.items.append(group("legend", parts))
        self.reach = max(self.reach, y + row)
        return y + row - top

    def text(
        self, x: float, y: float, text: str, *, size: float = TICK_SIZE, anchor: str = "middle"
    ) -> None:
        """A label with its baseline at ``(x, y)`` px."""
        self.items.append(label(x, y, text, size=size, anchor=anchor))

    def svg(self) -> str:
        """The whole SVG document."""
        height = self.height or math.ceil(max([self.reach, *(p.bottom() for p in self.plots)]) + 6)
        clips = "".join(
            f'<clipPath id="{p.clip_id}">'
            + element("rect", x=p.left, y=p.top, width=p.width, height=p.height)
            + "</clipPath>"
            for p in self.plots
        )
        head = (
            f'<svg xmlns="http://www.w3.org/2000/svg"{_attrs(width=float(self.width), height=float(height))}'
            f' viewBox="0 0 {num(self.width)} {num(height)}" role="img"'
            f' font-family="{FONT}" font-size="{TICK_SIZE}" fill="{INK}">'
        )
        return (
            head
            + (element("title", self.title) if self.title else "")
            + (f"<defs>{clips}</defs>" if clips else "")
            + element("rect", width="100%", height="100%", fill="#fff")
            + "".join(self.items)
            + "".join(p.markup() for p in self.plots)
            + "</svg>\n"
        )

    def data_uri(self) -> str:
        """The SVG as a base64 ``data:image/svg+xml`` URI, for an ``<img src>``."""
        return "data:image/svg+xml;base64," + base64.b64encode(self.svg().encode("utf-8")).decode(
            "ascii"
        )
