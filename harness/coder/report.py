"""The coder report: each metric's mean per level, configs side by side (``codeeval coder report``).

The page has the style and the hand-drawn SVG charts of ``codeeval report``
(:mod:`harness.report.html`, :mod:`harness.report.svg`): an overview table (pairs, the fraction
whose chosen completion passes every critical analyzer, the fraction passing the tests, the time
per pair), then per metric a table of means and a grouped bar chart (one bar per config and
level). A metric a config could not compute (an empty column) is shown as unavailable.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from pathlib import Path

import harness.report.html as h
from harness.coder.eval_config import EvalConfig
from harness.coder.evaluation import METRICS_FILE
from harness.coder.metrics import METRICS
from harness.coder.pairs import LEVELS, level_dirs
from harness.report.plots import WIDTH, series_colour
from harness.report.scales import Axis
from harness.report.svg import Chart

# level -> metric -> values (empty: the metric was asked for but is unavailable)
LevelValues = dict[str, dict[str, list[float]]]
OVERVIEW = (
    "all_analyzers_passed_score",
    "tests_passed_score",
    "loops_required_score",
    "time_score",
)


def read_metrics(config: EvalConfig) -> LevelValues:
    """Per level, each metric's values over every pair and run of ``config``'s metrics.csv."""
    found: LevelValues = {}
    for level_dir in level_dirs(config.dataset_dir(), config.levels):
        path = level_dir / "eval" / config.name / METRICS_FILE
        if not path.is_file():
            continue
        values: dict[str, list[float]] = {}
        with open(path, newline="") as fh:
            for row in csv.DictReader(fh):
                for name, cell in row.items():
                    if name in ("run", "pair") or name not in METRICS:
                        continue
                    values.setdefault(name, [])
                    if cell not in ("", None):
                        values[name].append(float(cell))
        found[level_dir.name] = values
    return found


def mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def metric_chart(metric: str, levels: list[str], means: dict[str, dict[str, float | None]]) -> str:
    """Grouped bars: per level, one bar per config (``means``: config -> level -> mean)."""
    configs = list(means)
    values = [v for by_level in means.values() for v in by_level.values() if v is not None]
    chart = Chart(WIDTH, metric)
    left = 64
    top = chart.reach
    entries = [(name, series_colour(i)) for i, name in enumerate(configs)]
    top += chart.legend(left, top, WIDTH - left - 16, entries) + 8
    y = Axis.linear(min([0.0, *values]), max([0.0, *values]) or 1.0, pad=0.05)
    plot = chart.plot(left, top + 4, WIDTH - left - 16, 180, Axis.categories(levels), y)
    width = 0.8 / max(1, len(configs))
    for j, name in enumerate(configs):
        # one "histogram" per config whose bins are its own bars (empty bins draw nothing)
        edges: list[float] = []
        counts: list[float] = []
        for i, level in enumerate(levels):
            x0 = i - 0.4 + j * width
            edges += [x0, x0 + width]
            value = means[name].get(level)
            counts += [value if value is not None and math.isfinite(value) else 0.0, 0.0]
        plot.histogram(edges, counts[:-1], series_colour(j), name, opacity=0.9)  # type: ignore[arg-type]
    return chart.data_uri()


def write_report(configs: Sequence[EvalConfig], target: Path) -> Path:
    data = {c.name: read_metrics(c) for c in configs}
    levels = sorted({lv for by_level in data.values() for lv in by_level}, key=_level_number)
    metrics = [m for m in METRICS if any(m in v for by in data.values() for v in by.values())]
    body = [
        h.paragraph(
            "Configs: " + ", ".join(f"{c.name} ({c.path})" for c in configs)
            + ". Levels: " + "; ".join(f"{lv}: {LEVELS.get(_level_number(lv), '')}" for lv in levels)
        )
    ]  # fmt: skip
    body.append(_overview(data, levels))
    body += [_metric_section(metric, data, levels) for metric in metrics]
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(h.page("Code completion with analyzer feedback", body))
    return target


def _overview(data: dict[str, LevelValues], levels: list[str]) -> str:
    """One row per config and level: the pairs and the :data:`OVERVIEW` metrics' means."""
    overview = []
    for name, by_level in data.items():
        for level in levels:
            values = by_level.get(level, {})
            pairs = max((len(v) for v in values.values()), default=0)
            overview.append([name, level, pairs, *(_cell(values, m) for m in OVERVIEW)])
    return h.section(
        "Overview",
        h.table(["config", "level", "pairs", *OVERVIEW], overview),
        h.paragraph("Means over pairs and runs; blank: unavailable (no value computed).", "muted"),
    )


def _metric_section(metric: str, data: dict[str, LevelValues], levels: list[str]) -> str:
    """One metric's means per level and config: a table and, where there are values, a chart."""
    means = {
        name: {lv: mean(by_level.get(lv, {}).get(metric, [])) for lv in levels}
        for name, by_level in data.items()
    }
    rows = [[lv, *(means[name][lv] for name in data)] for lv in levels]
    kind = METRICS[metric][0]
    parts = [h.table(["level", *data], rows)]
    if any(v is not None for by in means.values() for v in by.values()):
        parts.append(h.image(metric_chart(metric, levels, means), metric))
    else:
        parts.append(h.paragraph("unavailable here for every config", "muted"))
    return h.section(f"{metric} ({kind})", *parts, anchor=metric)


def _cell(values: dict[str, list[float]], metric: str) -> float | None:
    return mean(values.get(metric, []))


def _level_number(name: str) -> int:
    tail = name.rsplit("_", 1)[-1]
    return int(tail) if tail.isdigit() else 10**6
