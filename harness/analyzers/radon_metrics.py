"""radon: cyclomatic complexity per function (max, mean), maintainability index, Halstead
volume and raw line counts, computed in-process (radon is pure Python and fast)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict

from radon.complexity import cc_visit
from radon.metrics import h_visit, mi_visit
from radon.raw import analyze as raw_analyze

from harness.analyzers.base import Report, Subject, error_report


class RadonReport(TypedDict):
    complexity: dict[str, int]  # function (Class.method) -> cyclomatic complexity
    max_complexity: int
    mean_complexity: float
    maintainability: float
    halstead_volume: float
    raw: dict[str, int]


class RadonAnalyzer:
    name = "radon"
    version = "2"  # 2: programs too long or too deep to analyze are not read
    static = True

    def analyze(self, subjects: Sequence[Subject]) -> list[Report]:
        reports: list[Report] = []
        for subject in subjects:
            if subject.tree is None:
                reports.append({"skipped": "the program does not parse"})
                continue
            try:
                reports.append(dict(radon_report(subject.program)))
            except Exception as exc:  # radon on odd but valid code: report, keep the sample
                reports.append(error_report(exc))
        return reports


def radon_report(program: str) -> RadonReport:
    blocks = cc_visit(program)
    functions: dict[str, int] = {}
    for block in blocks:
        if not hasattr(block, "methods"):  # functions and methods (``Class.method``), no classes
            functions[block.fullname] = block.complexity
    values = list(functions.values())
    raw = raw_analyze(program)
    return {
        "complexity": functions,
        "max_complexity": max(values, default=0),
        "mean_complexity": sum(values) / len(values) if values else 0.0,
        "maintainability": float(mi_visit(program, True)),
        "halstead_volume": float(h_visit(program).total.volume),
        "raw": {k: int(getattr(raw, k)) for k in raw._fields},
    }
