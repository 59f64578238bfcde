"""Reward parts that an analyzer said it cannot measure for this sample's problem.

An analyzer report of the form ``{"missing": why, ...}`` (efficiency without a yardstick: no
reference and too few passing samples in the batch, see harness.analyzers.efficiency) means
"not measurable here", which is not "measured as zero". The parts built from such a report
are left out of the reward and of its range, and named in ``reward_missing``, the same way
as the parts that have no analyzer for a translated language (harness.languages.rewards).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# preset -> {reward part: the analyzer whose report it is built from}
REPORT_PARTS: dict[str, dict[str, str]] = {
    "weighted": {"efficiency": "efficiency"},
}


def weight_key(part: str) -> str:
    """The ``evaluation`` key of the weighted preset that weighs ``part``."""
    return "test_case_weight" if part == "tests" else f"{part}_weight"


def drop_unmeasured(
    preset: str,
    parts: dict[str, float],
    bounds: tuple[float, float] | None,
    analyzers: Mapping[str, Any],
    params: Mapping[str, Any],
) -> tuple[dict[str, float], tuple[float, float] | None, dict[str, str]]:
    """``parts`` without those whose analyzer report is missing, the range lowered by their
    weights, and ``{part: why}``."""
    missing: dict[str, str] = {}
    for part, analyzer in REPORT_PARTS.get(preset, {}).items():
        report = analyzers.get(analyzer)
        if part in parts and isinstance(report, Mapping) and report.get("missing"):
            missing[part] = f"{analyzer}: {report['missing']}"
    return leave_out(parts, bounds, missing, params)


def leave_out(
    parts: dict[str, float],
    bounds: tuple[float, float] | None,
    missing: dict[str, str],
    params: Mapping[str, Any],
) -> tuple[dict[str, float], tuple[float, float] | None, dict[str, str]]:
    """``parts`` without the ``missing`` ones, the range lowered by their weights (a part
    that cannot be measured cannot be earned either), and ``missing`` itself."""
    if not missing:
        return parts, bounds, {}
    weights = params.get("evaluation", {})
    lowered = sum(float(weights.get(weight_key(part), 0.0)) for part in missing)
    kept = {k: v for k, v in parts.items() if k not in missing}
    if bounds is not None:
        bounds = (bounds[0], bounds[1] - lowered)
    return kept, bounds, missing
