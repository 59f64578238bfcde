"""Rewards for translated problems: what each part means in a compiled language, and what is
missing.

``syntax`` is whether the program compiled (JavaScript: parsed, as node reports it when the run
starts), read from the sample's cases (a compile failure fails every case with
``compile error: ...``). ``tests`` and
``execution`` come from the cases as for Python, and ``efficiency`` from the cases' times
against the median of the batch's passing samples (there are no references in these
languages; harness.analyzers.efficiency). The other analyzers read Python source (radon,
ruff, bandit, mypy, the structure of definitions, coverage); for other languages their
reports are ``{"missing": why}`` and the reward parts built from them are left out of the
reward and its range and listed in ``reward_missing`` - named, never a silent 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.languages.registry import language_for, language_of
from harness.records import Problem

# Analyzers that work on any language (they read the row, not Python source).
LANGUAGE_NEUTRAL = frozenset({"tests", "efficiency"})
# The parts each preset builds from Python-only analyzers.
MISSING_PARTS: dict[str, dict[str, str]] = {
    "weighted": {
        "quality": "radon, ruff and bandit read Python",
        "security": "bandit reads Python",
    },
}
_COMPILE_FAILURES = ("compile error", "compilation timed out", "the compiler was killed")


def is_native(problem: Problem | None) -> bool:
    return problem is not None and language_of(problem) is not None


def native_reports(
    row: Mapping[str, Any], problem: Problem, reports: Mapping[str, Any]
) -> dict[str, Any]:
    """The analyzer reports of a translated problem's row."""
    title = language_for(problem).title
    out: dict[str, Any] = {}
    for name, report in reports.items():
        if name == "syntax":
            out[name] = compile_report(row)
        elif name in LANGUAGE_NEUTRAL:
            out[name] = report
        else:
            out[name] = {"missing": f"no {name} analyzer for {title}"}
    return out


def compile_report(row: Mapping[str, Any]) -> dict[str, Any]:
    """``syntax`` for a compiled language: whether the program compiled, and the first error."""
    for case in row.get("cases") or []:
        message = str(case.get("message", ""))
        for marker in _COMPILE_FAILURES:
            at = message.find(marker)
            if at >= 0:
                return {"ok": False, "line": None, "col": None, "message": message[at:]}
    return {"ok": bool(row.get("cases")), "line": None, "col": None, "message": ""}


def without_missing(
    preset: str,
    problem: Problem,
    parts: dict[str, float],
    bounds: tuple[float, float] | None,
    params: Mapping[str, Any],
) -> tuple[dict[str, float], tuple[float, float] | None, dict[str, str]]:
    """The parts without those no analyzer can give for this language, the range lowered by
    their weights, and ``{part: why it is missing}``."""
    title = language_for(problem).title
    if preset not in MISSING_PARTS:
        if preset in ("binary", "custom"):
            return parts, bounds, {}
        # Level presets read the structure of Python definitions.
        why = f"the {preset} preset reads Python definitions; there is no {title} analyzer"
        return {}, None, {part: why for part in parts}
    missing = {
        part: f"no {title} analyzer: {why}"
        for part, why in MISSING_PARTS[preset].items()
        if part in parts
    }
    from harness.reward.missing import leave_out  # here: harness.reward imports this module

    return leave_out(parts, bounds, missing, params)
