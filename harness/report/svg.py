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

The pieces live by concern: :mod:`harness.report.markup` (escaping and elements),
:mod:`harness.report.scales` (ticks and ``Axis``), :mod:`harness.report.plotarea` (``Plot`` and
box statistics); this module is the canvas.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Sequence

from harness.report.markup import (
    FONT,
    INK,
    TICK_SIZE,
    TITLE_SIZE,
    attributes,
    element,
    group,
    label,
    num,
    shorten,
    text_width,
)
from harness.report.plotarea import Plot
from harness.report.scales import Axis


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
            f'<svg xmlns="http://www.w3.org/2000/svg"{attributes(width=float(self.width), height=float(height))}'
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
