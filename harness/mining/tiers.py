"""Difficulty tiers of mined problems, from measured features.

Features: ``lines`` (non-blank, non-comment lines of the body), ``complexity`` (radon's
cyclomatic complexity of the original function), ``dependencies`` (repository names it uses)
and ``checks`` (tests that check it). Each of the first three scores 0, 1 or 2 against the
thresholds below; many checks add one point (more behaviour to get right). ``tier0`` is at
most 1 point, ``tier1`` at most 3, ``tier2`` above.
"""

from __future__ import annotations

from typing import Any

from harness.analyzers.radon_metrics import radon_report

THRESHOLDS = {"lines": (6, 15), "complexity": (2, 5), "dependencies": (0, 2)}
MANY_CHECKS = 8
TIERS = ("tier0", "tier1", "tier2")


def features(
    program: str, qualname: str, body: str, dependencies: int, checks: int
) -> dict[str, int]:
    """The features of one problem (``program`` is prompt + reference, valid Python)."""
    lines = [ln for ln in body.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    try:
        complexity = radon_report(program)["complexity"].get(qualname, 1)
    except Exception:  # radon on odd but valid code: count it as a straight line
        complexity = 1
    return {
        "lines": len(lines),
        "complexity": int(complexity),
        "dependencies": dependencies,
        "checks": checks,
    }


def points(measured: dict[str, Any]) -> int:
    total = 0
    for name, (low, high) in THRESHOLDS.items():
        value = measured[name]
        total += 0 if value <= low else 1 if value <= high else 2
    return total + (1 if measured["checks"] >= MANY_CHECKS else 0)


def tier(measured: dict[str, Any]) -> str:
    score = points(measured)
    return TIERS[0] if score <= 1 else TIERS[1] if score <= 3 else TIERS[2]
