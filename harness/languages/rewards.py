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


def native_reports(
    title: str, row: Mapping[str, Any], reports: Mapping[str, Any]
) -> dict[str, Any]:
    """The analyzer reports of a row of a problem translated into the language ``title``."""
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


def missing_parts(title: str, preset: str, parts: Mapping[str, float]) -> dict[str, str]:
    """``{part: why}`` for the parts of ``preset`` no analyzer gives in the language ``title``
    (the reward leaves them out, and lowers its range by their weights)."""
    if preset not in MISSING_PARTS:
        if preset in ("binary", "custom"):
            return {}
        # Level presets read the structure of Python definitions.
        why = f"the {preset} preset reads Python definitions; there is no {title} analyzer"
        return {part: why for part in parts}
    return {
        part: f"no {title} analyzer: {why}"
        for part, why in MISSING_PARTS[preset].items()
        if part in parts
    }
