"""Plots for the HTML reports: small SVG charts (``harness.report.svg``) as data URIs.

Each function returns a ``data:image/svg+xml;base64,...`` URI for an ``<img>``. They are drawn
by hand rather than with matplotlib, whose import and PNG rendering cost about half a second
at the end of every evaluation run; the SVGs are also sharper and a few kB each.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone

from harness.report.markup import TICK_SIZE, text_width
from harness.report.plotarea import box_stats
from harness.report.scales import Axis
from harness.report.svg import Chart

STATUS_COLOURS = {
    "passed": "#2e7d32",
    "failed": "#c62828",
    "timeout": "#ef6c00",
    "error": "#757575",
}
# matplotlib's default colour cycle ("tab10"), which these plots used for their series.
SERIES_COLOURS = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
WIDTH = 576  # px: the 6 inch figures at 96 dpi that the reports had
HIST_BINS = [i / 10 for i in range(11)]


def series_colour(index: int) -> str:
    return SERIES_COLOURS[index % len(SERIES_COLOURS)]


def _left_margin(labels: Sequence[str], limit: float = 180) -> float:
    """Room left of a plot for its y tick labels (and a y axis title)."""
    return 10 + min(limit, max((text_width(t, TICK_SIZE) for t in labels), default=0)) + 10


def status_bars(counts: Mapping[str, Mapping[str, int]]) -> str:
    """Stacked bars of sample verdicts per suite. ``counts``: suite -> status -> n."""
    suites = list(counts)
    chart = Chart(WIDTH, "Sample verdicts")
    left = _left_margin(suites)
    top = chart.reach
    top += chart.legend(left, top, WIDTH - left - 16, list(STATUS_COLOURS.items())) + 8
    totals = [sum(max(0, int(counts[s].get(k, 0))) for k in STATUS_COLOURS) for s in suites]
    x = Axis.linear(0, max([1, *totals]), "samples", integer=True)
    # The first suite on top: category positions count from the bottom.
    y = Axis.categories(suites[::-1])
    plot = chart.plot(left, top, WIDTH - left - 16, 34 * max(1, len(suites)), x, y)
    for i, suite in enumerate(suites):
        values = [float(counts[suite].get(k, 0)) for k in STATUS_COLOURS]
        plot.stacked_hbars(len(suites) - 1 - i, values, list(STATUS_COLOURS.values()), suite)
    return chart.data_uri()


def histogram_counts(values: Sequence[float], edges: Sequence[float] = HIST_BINS) -> list[int]:
    """How many ``values`` fall in each bin ``[edges[i], edges[i + 1])``, the last bin closed
    (numpy's rule); values outside the edges are not counted."""
    counts = [0] * (len(edges) - 1)
    for v in values:
        if edges[0] <= v <= edges[-1]:
            counts[min(bisect_right(edges, v) - 1, len(counts) - 1)] += 1
    return counts


def rate_histogram(rates: Mapping[str, Sequence[float]]) -> str:
    """Histogram of per-problem pass@1, one series per suite."""
    chart = Chart(WIDTH, "Distribution of per-problem pass rates")
    counts = {suite: histogram_counts(values) for suite, values in rates.items()}
    y = Axis.linear(0, max([1, *(max(c) for c in counts.values())]), "problems", integer=True)
    left = _left_margin([t for _, t in y.ticks]) + 16
    top = chart.reach
    if len(rates) > 1:
        entries = [(suite, series_colour(i)) for i, suite in enumerate(rates)]
        top += chart.legend(left, top, WIDTH - left - 16, entries) + 8
    plot = chart.plot(
        left, top + 4, WIDTH - left - 16, 200, Axis.linear(0, 1, "per-problem pass@1"), y
    )
    for i, (suite, bins) in enumerate(counts.items()):
        plot.histogram(HIST_BINS, bins, series_colour(i), suite)
    return chart.data_uri()


def reward_parts(parts: Mapping[str, Sequence[float]], rewards: Sequence[float]) -> str:
    """Box plots of every named reward part, plus the total reward."""
    series = dict(parts)
    if rewards:
        series = {"reward": list(rewards), **series}
    names = list(series)
    clean = {n: [float(v) for v in series[n] if math.isfinite(v)] for n in names}
    values = [v for vs in clean.values() for v in vs]
    y = Axis.linear(min(values, default=0.0), max(values, default=1.0), pad=0.05)
    width = max(384, 86 * len(names) + 144)
    chart = Chart(width, "Reward and its parts (per sample)")
    left = _left_margin([t for _, t in y.ticks])
    x = Axis.categories(names, slant=True)
    plot = chart.plot(left, chart.reach + 4, width - left - 16, 220, x, y)
    for i, name in enumerate(names):
        if clean[name]:
            plot.box(i, box_stats(clean[name]), name)
    return chart.data_uri()


def history_lines(series: Mapping[str, Sequence[tuple[str, int, float]]]) -> str:
    """pass@1 over time per suite; ``series``: suite -> [(iso time, run id, pass@1)]."""
    points = {
        suite: [(_parse_time(t).timestamp(), float(v)) for t, _, v in rows]
        for suite, rows in series.items()
    }
    times = [t for rows in points.values() for t, _ in rows] or [0.0]
    chart = Chart(WIDTH, "pass@1 over time (run history)")
    y = Axis.linear(0, 1, "pass@1", pad=0.02)
    left = _left_margin([t for _, t in y.ticks]) + 16
    entries = [(suite, series_colour(i)) for i, suite in enumerate(points)]
    top = chart.reach
    top += chart.legend(left, top, WIDTH - left - 16, entries, marker="line") + 8
    plot = chart.plot(left, top, WIDTH - left - 16, 200, Axis.time(min(times), max(times)), y)
    for i, (suite, rows) in enumerate(points.items()):
        plot.polyline(rows, series_colour(i), suite)
    return chart.data_uri()


def step_lines(
    title: str,
    series: Mapping[str, Sequence[tuple[float, float]]],
    y_label: str = "",
) -> str:
    """Metrics over training steps, one line per series; ``series``: name -> [(step, value)].
    Non-finite values are left out (a trainer logs them as null), and so are magnitudes beyond
    1e300, a diverged run's, whose axis arithmetic would overflow."""
    clean = {
        name: [(float(s), float(v)) for s, v in points if abs(s) < 1e300 and abs(v) < 1e300]
        for name, points in series.items()
    }
    steps = [s for points in clean.values() for s, _ in points] or [0.0]
    values = [v for points in clean.values() for _, v in points] or [0.0]
    chart = Chart(WIDTH, title)
    y = Axis.linear(min(values), max(values), y_label, pad=0.05)
    left = _left_margin([t for _, t in y.ticks]) + (16 if y_label else 0)
    entries = [(name, series_colour(i)) for i, name in enumerate(clean)]
    top = chart.reach
    top += chart.legend(left, top, WIDTH - left - 16, entries, marker="line") + 8
    x = Axis.linear(min(steps), max(steps), "step", integer=True)
    plot = chart.plot(left, top, WIDTH - left - 16, 200, x, y)
    for i, (name, points) in enumerate(clean.items()):
        # Dots only while they stay apart; a long run is a plain line.
        plot.polyline(sorted(points), series_colour(i), name, markers=len(points) <= 60)
    return chart.data_uri()


def compare_scatter(
    pairs: Sequence[tuple[float, float]], label_a: str, label_b: str, pass_a: float, pass_b: float
) -> str:
    """Per-problem pass@1 of run A against run B, with the overall pass@1 of each."""
    chart = Chart(864)
    top = 8 + TICK_SIZE + 20  # room for the plot titles
    x = Axis.linear(0, 1, f"A: {label_a}"[:60], pad=0.05)
    y = Axis.linear(0, 1, f"B: {label_b}"[:60], pad=0.05)
    scatter = chart.plot(
        64, top, 430, 260, x, y, "Per-problem pass@1 (green: B better, red: B worse)"
    )
    # Jitter is deterministic (by index) so identical inputs give identical pictures.
    jit = [((i * 37) % 11 - 5) / 150 for i in range(len(pairs))]
    colours = ["#2e7d32" if b > a else "#c62828" if b < a else "#90a4ae" for a, b in pairs]
    scatter.line(0, 0, 1, 1, colour="#999", width=0.8)
    scatter.scatter([(a + j, b - j) for (a, b), j in zip(pairs, jit, strict=True)], colours)
    bars = chart.plot(580, top, 264, 260, Axis.categories(["A", "B"]), Axis.linear(0, 1), "pass@1")
    bars.bars([pass_a, pass_b], ["#1565c0", "#6a1b9a"])
    for i, v in enumerate((pass_a, pass_b)):
        bars.text(i, v + 0.02, f"{v:.3f}")
    return chart.data_uri()


def _parse_time(text: str) -> datetime:
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return datetime.fromtimestamp(0, timezone.utc)
    # Mixed naive and aware times cannot share an axis: treat naive ones as UTC.
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)
