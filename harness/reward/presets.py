"""The reward presets: analyzer reports -> named parts and the range of the reward.

Every preset returns ``(parts, (lo, hi))`` with the parts before the shift; the caller adds the
config's shift, so ``sum(parts) + shift == reward`` and ``reward_range == [lo + shift,
hi + shift]`` always hold. Keys a multi-agent caller may put on a row:

- ``agent_code: {agent: code}`` (class_levels): each agent's own code, to find methods that
  more than one agent wrote;
- ``required_methods: [...]`` (class_levels): the methods the class must have (default: the
  suite's metadata, else the skeleton's methods).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from typing import Any

from harness.analyzers.base import program_of
from harness.analyzers.outcomes import exception_type
from harness.analyzers.structure import function_info, implemented_methods, is_stub
from harness.program_ast import parse_program
from harness.records import Problem

Parts = dict[str, float]
Range = tuple[float, float]
SEVERITY_PENALTY = {"LOW": 0.25, "MEDIUM": 0.5, "HIGH": 1.0}


# ---------------------------------------------------------------- binary


def binary(row: Mapping[str, Any], problem: Problem | None, reports: Mapping[str, Any], params: Mapping[str, Any]) -> tuple[Parts, Range]:  # fmt: skip
    """1 if every case passed, else 0."""
    return {"tests": 1.0 if row.get("passed") else 0.0}, (0.0, 1.0)


# ---------------------------------------------------------------- weighted


def weighted(row: Mapping[str, Any], problem: Problem | None, reports: Mapping[str, Any], params: Mapping[str, Any]) -> tuple[Parts, Range]:  # fmt: skip
    """syntax, execution, tests, quality and efficiency, each ``weight x score in [0, 1]``.

    - syntax: the program parses;
    - execution: fraction of cases that ran to an answer (passed, or failed on a wrong
      answer) rather than raising, timing out or erroring;
    - tests: fraction of cases passed;
    - quality: mean of the enabled checks: complexity (1 if radon's max cyclomatic complexity
      <= max_complexity, else max_complexity / it), style (max(0, 1 - 0.1 x ruff findings)),
      security (max(0, 1 - bandit penalties: LOW .25, MEDIUM .5, HIGH 1)); a check that
      could not read the program scores 0; with ``security_weight`` > 0 security is its own
      part instead;
    - efficiency: yardstick time / sample time on the passed cases (capped at 1), where the
      yardstick is the reference's time, else the median of the batch's passing samples
      (harness.analyzers.efficiency); 0 when the peak memory is over ``memory_limit`` MB; left
      out and named in ``reward_missing`` when there is no yardstick (harness.reward.missing).
    """
    ev = params["evaluation"]
    parses = bool(reports.get("syntax", {}).get("ok"))
    cases = list(row.get("cases") or [])
    tests = reports.get("tests") or {}
    separate_security = float(ev.get("security_weight", 0.0)) > 0
    parts: Parts = {
        "syntax": ev["syntax_weight"] * (1.0 if parses else 0.0),
        "execution": ev["execution_weight"] * (execution_score(cases) if parses else 0.0),
        "tests": ev["test_case_weight"] * float(tests.get("pass_fraction", 0.0)),
        "quality": ev["quality_weight"] * (quality_score(reports, ev) if parses else 0.0),
        "efficiency": ev["efficiency_weight"] * efficiency_score(reports, ev),
    }
    high = sum(float(ev[k]) for k in WEIGHTED_KEYS)
    if separate_security:
        score = security_score(reports.get("bandit") or {}) if parses else 0.0
        parts["security"] = float(ev["security_weight"]) * score
        high += float(ev["security_weight"])
    return parts, (0.0, high)


WEIGHTED_KEYS = (
    "syntax_weight",
    "execution_weight",
    "test_case_weight",
    "quality_weight",
    "efficiency_weight",
)


def quality_score(reports: Mapping[str, Any], ev: Mapping[str, Any]) -> float:
    """The mean of the enabled quality checks of a program that parses (0 with none)."""
    config = ev["code_quality"]
    scores = []
    # A check that ran and could not read the program (radon's visitors on a tree too deep
    # for them) gives no credit, as bandit's does: being unreadable must not pay.
    radon = reports.get("radon") or {}
    if "max_complexity" in radon:
        worst = radon["max_complexity"]
        limit = float(config.get("max_complexity", 10))
        scores.append(1.0 if worst <= limit else limit / worst)
    elif "error" in radon:
        scores.append(0.0)
    style = reports.get("style") or {}
    if config.get("enable_pep8", True):
        if "count" in style:
            scores.append(max(0.0, 1.0 - 0.1 * style["count"]))
        elif "error" in style:
            scores.append(0.0)
    separate_security = float(ev.get("security_weight", 0.0)) > 0
    if config.get("security_checks", True) and not separate_security:
        scores.append(security_score(reports.get("bandit") or {}))
    return sum(scores) / len(scores) if scores else 0.0


def efficiency_score(reports: Mapping[str, Any], ev: Mapping[str, Any]) -> float:
    """The efficiency analyzer's speed, or 0 over the memory limit."""
    efficiency = reports.get("efficiency") or {}
    rss = efficiency.get("max_rss_kb")
    if rss is not None and ev.get("memory_limit") and rss > float(ev["memory_limit"]) * 1024:
        return 0.0
    return float(efficiency.get("speed") or 0.0)


def execution_score(cases: list[Mapping[str, Any]]) -> float:
    if not cases:
        return 0.0
    ran = sum(
        1
        for c in cases
        if c.get("status") == "passed"
        or (c.get("status") == "failed" and exception_type(dict(c)) in (None, "AssertionError"))
    )
    return ran / len(cases)


def security_score(bandit: Mapping[str, Any]) -> float:
    if "issues" not in bandit:
        return 0.0  # not scanned (does not parse, or bandit failed): no credit
    penalty = sum(SEVERITY_PENALTY.get(i["severity"], 0.0) for i in bandit["issues"])
    return max(0.0, 1.0 - penalty)


# ---------------------------------------------------------------- code_levels

CODE_LEVELS = ("aux", "main", "syntax", "tests", "aux_used", "not_wrapper", "aux_ignored")


def code_levels(row: Mapping[str, Any], problem: Problem | None, reports: Mapping[str, Any], params: Mapping[str, Any]) -> tuple[Parts, Range]:  # fmt: skip
    """Levels for an ``aux`` helper and the main function (the entry point) in one program.

    +0.4 aux defined with a return; +0.6 main defined with a return (else stop); +0.5 the
    program parses (else stop); + pass fraction (up to 1.0); +0.5 at least one case passes and
    main calls aux; +1.0 that, and main is not a thin wrapper of aux; -0.5 main ignores the value
    aux returns. Levels after a stop are 0. Without a helper (``helper: false``) only main,
    syntax and tests count (maximum 2.1).
    """
    use_helper = bool(params.get("helper", True))
    helper = str(params.get("helper_name", "aux"))
    main = problem.entry_point if problem is not None else ""
    names = CODE_LEVELS if use_helper else ("main", "syntax", "tests")
    parts: Parts = dict.fromkeys(names, 0.0)
    high = 4.0 if use_helper else 2.1
    structure = reports.get("structure") or {}
    functions = structure.get("functions")
    if functions is None:  # does not parse as a whole: look at each top-level def alone
        functions = lenient_functions(program_of(row, problem))
    aux = functions.get(helper)
    if use_helper and aux is not None and aux["has_return"]:
        parts["aux"] = 0.4
    main_info = functions.get(main)
    if main_info is None or not main_info["has_return"]:
        return parts, (0.0, high)
    parts["main"] = 0.6
    if not (reports.get("syntax") or {}).get("ok"):
        return parts, (0.0, high)
    parts["syntax"] = 0.5
    tests = reports.get("tests") or {}
    parts["tests"] = min(1.0, float(tests.get("pass_fraction", 0.0)))
    if use_helper:
        parts.update(helper_levels(main_info, helper, aux is not None, tests))
    return parts, (0.0, high)


def helper_levels(
    main_info: Mapping[str, Any], helper: str, has_helper: bool, tests: Mapping[str, Any]
) -> Parts:
    """code_levels' levels for how main uses the helper (only those that apply)."""
    parts: Parts = {}
    calls_aux = has_helper and helper in main_info["calls"]
    if calls_aux and int(tests.get("passed", 0)) >= 1:
        parts["aux_used"] = 0.5
        if main_info["wrapper_of"] != helper:
            parts["not_wrapper"] = 1.0
    if calls_aux and helper in main_info["ignored_calls"]:
        parts["aux_ignored"] = -0.5
    return parts


DEF_RE = re.compile(r"^(?:async\s+)?def\s", re.MULTILINE)


def lenient_functions(program: str) -> dict[str, Any]:
    """Top-level functions of a program that does not parse, each def parsed on its own."""
    starts = [m.start() for m in DEF_RE.finditer(program)]
    found: dict[str, Any] = {}
    if not starts:  # no def at all (prose, a bare expression): no function to find
        return found
    for start, end in zip(starts, [*starts[1:], len(program)], strict=True):
        chunk = program[start:end]
        # Cut trailing module-level lines (they would belong to no function).
        lines = chunk.splitlines()
        keep = [lines[0], *[ln for ln in lines[1:] if not ln.strip() or ln[:1].isspace()]]
        tree = parse_program("\n".join(keep))
        if tree is None:
            continue
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                found[node.name] = function_info(node)
    return found


# ---------------------------------------------------------------- class_levels


def class_levels(row: Mapping[str, Any], problem: Problem | None, reports: Mapping[str, Any], params: Mapping[str, Any]) -> tuple[Parts, Range]:  # fmt: skip
    """lv1 = 2 x implemented / required; lv2 = 4 x passed / run; lv3 = -(methods written by
    more than one agent) / required; all 0 when the merged class does not parse."""
    parts: Parts = {"implemented": 0.0, "tests": 0.0, "overlap": 0.0}
    if not (reports.get("syntax") or {}).get("ok"):
        return parts, (-1.0, 6.0)
    structure = reports.get("structure") or {}
    required = list(row.get("required_methods") or structure.get("methods_required") or [])
    implemented = set(structure.get("methods_implemented") or [])
    if row.get("required_methods"):  # the caller's list may differ from the suite's
        implemented = set(_class_methods(program_of(row, problem), problem))
    cases = list(row.get("cases") or [])
    if required:
        parts["implemented"] = 2.0 * len([m for m in required if m in implemented]) / len(required)
    if cases:
        parts["tests"] = 4.0 * sum(c.get("status") == "passed" for c in cases) / len(cases)
    agent_code = row.get("agent_code") or {}
    if required and agent_code:
        parts["overlap"] = -overlap_share(required, agent_code, problem)
    return parts, (-1.0, 6.0)


def overlap_share(
    required: list[str], agent_code: Mapping[str, Any], problem: Problem | None
) -> float:
    """The share of required methods that more than one agent wrote."""
    counts: dict[str, int] = {}
    for code in agent_code.values():
        for method in set(_class_methods(str(code), problem)):
            counts[method] = counts.get(method, 0) + 1
    return len([m for m in required if counts.get(m, 0) > 1]) / len(required)


def _class_methods(code: str, problem: Problem | None) -> list[str]:
    """Implemented methods of the problem's class in ``code`` (or its top-level defs)."""
    tree = parse_program(code)
    if tree is None:
        return []
    name = problem.entry_point if problem is not None else None
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and (name is None or node.name == name):
            return implemented_methods(node)
    return [
        n.name
        for n in tree.body
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and not is_stub(n.body)
    ]


PRESET_FUNCTIONS = {
    "weighted": weighted,
    "binary": binary,
    "code_levels": code_levels,
    "class_levels": class_levels,
}
# The low end of each preset's range (the range's first bound, before the config's shift).
LOWEST = {"weighted": 0.0, "binary": 0.0, "code_levels": 0.0, "class_levels": -1.0}
