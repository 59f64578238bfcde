"""Per-case test outcomes → one row per sample, and the run's summary with pass@k.

Case outcomes come from pytest reports (the trusted verdicts); sample-level facts (the program,
how long it ran) from the compiled suite and the sandbox. Formats: docs/formats.md.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.memo import IdentityMemo
from harness.passk import mean_pass_at_k, reportable_ks
from harness.records import Problem, is_plus
from harness.sandbox.api import empty_resources


@dataclass
class CaseOutcome:
    case_id: str
    status: str  # passed | failed | timeout | error | skipped
    message: str = ""
    duration_s: float = 0.0


@dataclass
class SampleOutcomes:
    """What the session saw of one sample."""

    suite: str
    task_id: str
    sample_id: str
    cases: dict[str, CaseOutcome] = field(default_factory=dict)
    execution: dict[str, Any] = field(default_factory=dict)


def execution_record(execution: Any) -> dict[str, Any]:
    """The sample-level facts of a sandbox execution, as a row's ``execution`` stores them."""
    return {
        "duration_s": execution.duration_s,
        "max_rss_kb": execution.max_rss_kb,
        "stdout": execution.stdout,
        "stderr": execution.stderr,
        "coverage": execution.coverage,
        "notes": list(execution.notes),
        "infra_error": execution.infra_error,
        **execution.resources,
    }


PYTHON = "python"
# Suffixes of the translated suites (suites.multipl), for rows written before rows named
# their language.
_SUITE_SUFFIXES = {"-js": "js", "-cpp": "cpp", "-java": "java", "-rs": "rs"}


def problem_language(problem: Problem) -> str:
    """``python``, or the target language of a translated problem (``js``, ``cpp``, ...)."""
    value = problem.metadata.get("language") if problem.metadata else None
    return value if isinstance(value, str) and value else PYTHON


def suite_language(suite: str) -> str:
    """A suite's language from its name (``humaneval-js`` -> ``js``; else ``python``)."""
    for suffix, language in _SUITE_SUFFIXES.items():
        if suite.endswith(suffix):
            return language
    return PYTHON


def row_language(row: Mapping[str, Any]) -> str:
    """A results row's language (its ``language``, else from its suite's name)."""
    value = row.get("language")
    return value if isinstance(value, str) and value else suite_language(str(row.get("suite", "")))


def sample_status(problem: Problem, outcomes: SampleOutcomes) -> tuple[str, str | None]:
    """``(status, error_kind)`` of a sample from its case outcomes."""
    statuses = [
        outcomes.cases[c.case_id].status for c in problem.cases if c.case_id in outcomes.cases
    ]
    return _status(problem, outcomes, statuses)


def _status(
    problem: Problem, outcomes: SampleOutcomes, statuses: Sequence[str]
) -> tuple[str, str | None]:
    """``(status, error_kind)`` from the statuses of the problem's cases that have outcomes."""
    if problem.defects:
        return "error", "data"
    if outcomes.execution.get("infra_error"):
        return "error", "infra"
    if not problem.cases:
        return "error", "data"
    if "error" in statuses:
        return "error", "infra"
    if len(statuses) == len(problem.cases) and all(s == "passed" for s in statuses):
        return "passed", None
    if "timeout" in statuses:
        return "timeout", None
    return "failed", None


# (case id, weaker, plus) of each case of a problem, kept for the last problems seen: a row
# repeats them for each of a problem's samples (EvalPlus's: a thousand cases each).
_CaseFacts = tuple[tuple[str, bool, bool], ...]
_case_facts: IdentityMemo[_CaseFacts] = IdentityMemo(limit=256)


def _facts(problem: Problem) -> _CaseFacts:
    return tuple((c.case_id, c.weaker, is_plus(c.case_id)) for c in problem.cases)


def build_row(problem: Problem, outcomes: SampleOutcomes, sample: dict[str, Any]) -> dict[str, Any]:
    """The results.jsonl row of one sample."""
    facts = _case_facts.get(problem, lambda: _facts(problem))
    found = outcomes.cases.get
    statuses = []
    cases = []
    for case_id, weaker, plus in facts:
        outcome = found(case_id)
        if outcome is None:  # built only when missing: a row can hold a thousand cases
            outcome = CaseOutcome(case_id, "error", "not run")
        else:
            statuses.append(outcome.status)
        entry = {
            "case_id": case_id,
            "status": outcome.status,
            "message": outcome.message,
            "weaker": weaker,
            "duration_s": outcome.duration_s,
        }
        if plus:
            entry["plus"] = True
        cases.append(entry)
    status, error_kind = _status(problem, outcomes, statuses)
    # Every row carries the accounting keys; a sample that never ran has zeros.
    execution = {**empty_resources(), **outcomes.execution}
    if problem.defects:
        execution.setdefault("notes", []).append("data defect: " + "; ".join(problem.defects))
    plus = {}
    if any(c.get("plus") for c in cases):  # the verdict on the original checks alone, too
        plus["base_passed"] = status == "passed" or (
            status != "error" and all(c["status"] == "passed" for c in cases if not c.get("plus"))
        )
    version = problem.metadata.get("data_version")  # a published benchmark's data release
    return {
        "suite": problem.suite,
        **({"data_version": version} if version else {}),
        "language": problem_language(problem),
        "task_id": problem.task_id,
        "sample_id": outcomes.sample_id,
        "status": status,
        "passed": status == "passed",
        "error_kind": error_kind,
        **plus,
        "cases": cases,
        "completion": sample.get("completion", ""),
        "program": sample.get("program", ""),
        "completion_kind": sample.get("kind"),
        "raw": sample.get("raw"),
        "agent": sample.get("agent"),
        "duration_s": execution.pop("duration_s", 0.0),
        "execution": execution,
    }


def summarize(
    rows: Sequence[dict[str, Any]], ks: Iterable[int], settings: dict[str, Any]
) -> dict[str, Any]:
    """``summary.json``: per suite and per language, counts and pass@k over the samples that
    could be judged, the settings, and the data errors."""
    data_errors = sorted(
        {
            (r["suite"], r["task_id"], "; ".join(r["execution"].get("notes", [])))
            for r in rows
            if r["error_kind"] == "data"
        }
    )
    return {
        **breakdown(rows, ks),
        "settings": settings,
        "data_errors": [{"suite": s, "task_id": t, "reason": why} for s, t, why in data_errors],
    }


def breakdown(rows: Sequence[dict[str, Any]], ks: Iterable[int]) -> dict[str, Any]:
    """``{"suites": {suite: entry}, "languages": {language: entry}}``: each entry counts the
    verdicts and gives pass@k (a suite's entry names its ``language``, a language's its
    ``suites``). Rows need ``suite``, ``task_id``, ``status``, ``passed``, ``error_kind``."""
    ks = list(ks)
    by_suite: dict[str, list[dict[str, Any]]] = defaultdict(list)
    by_language: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_suite[row["suite"]].append(row)
        by_language[row_language(row)].append(row)
    suites: dict[str, Any] = {}
    for suite, suite_rows in sorted(by_suite.items()):
        entry: dict[str, Any] = {"language": row_language(suite_rows[0]), **_counts(suite_rows, ks)}
        versions = sorted({r["data_version"] for r in suite_rows if r.get("data_version")})
        if versions:  # "HumanEval+ v0.1.10": the numbers are that release's
            entry["data_version"] = ", ".join(versions)
        base = _base_entry(suite_rows, ks)
        if base is not None:
            entry["base"] = base
        suites[suite] = entry
    languages = {
        language: {"suites": sorted({r["suite"] for r in lang_rows}), **_counts(lang_rows, ks)}
        for language, lang_rows in sorted(by_language.items())
    }
    return {"suites": suites, "languages": languages}


def _counts(rows: Sequence[dict[str, Any]], ks: list[int]) -> dict[str, Any]:
    """Counts of each verdict and pass@k; a problem is (suite, task id), so a language's
    entry pools the problems of all its suites."""
    per_problem: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for row in rows:
        if row["status"] != "error":
            per_problem[(row["suite"], row["task_id"])].append(row["passed"])
    counts = [(len(v), sum(v)) for v in per_problem.values()]
    entry: dict[str, Any] = {
        "problems": len({(r["suite"], r["task_id"]) for r in rows}),
        "samples": len(rows),
        "passed": sum(r["status"] == "passed" for r in rows),
        "failed": sum(r["status"] == "failed" for r in rows),
        "timeout": sum(r["status"] == "timeout" for r in rows),
        "errors": sum(r["status"] == "error" and r["error_kind"] != "data" for r in rows),
        "data_errors": sum(r["error_kind"] == "data" for r in rows),
    }
    for k in reportable_ks(ks, counts):
        entry[f"pass@{k}"] = round(mean_pass_at_k(counts, k), 6)
    return entry


def _base_entry(rows: Sequence[dict[str, Any]], ks: Iterable[int]) -> dict[str, Any] | None:
    """pass@k on the original checks alone, for a suite with plus cases (beside its pass@k on
    original + plus); ``None`` for a suite without plus cases."""
    if not any("base_passed" in r for r in rows):
        return None
    per_problem: dict[str, list[bool]] = defaultdict(list)
    for row in rows:
        if row["status"] != "error":
            per_problem[row["task_id"]].append(bool(row.get("base_passed", row["passed"])))
    counts = [(len(v), sum(v)) for v in per_problem.values()]
    plus_cases = {(r["task_id"], c["case_id"]) for r in rows for c in r["cases"] if c.get("plus")}
    entry: dict[str, Any] = {
        "passed": sum(
            r["status"] != "error" and bool(r.get("base_passed", r["passed"])) for r in rows
        ),
        "plus_cases": len(plus_cases),
    }
    for k in reportable_ks(list(ks), counts):
        entry[f"pass@{k}"] = round(mean_pass_at_k(counts, k), 6)
    return entry
