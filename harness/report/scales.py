"""Axes of the report charts: round tick values for numbers and dates, and the ``Axis`` that
places data on a plot (linear, categorical or time)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone


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
