"""tests (critical, when the pair has tests): the problem's checks, run in the harness's sandbox.

Beyond LLMcoder, which only reads the code: a pair built from a benchmark (``codeeval coder
pairs``) carries its problem, and the completed program is judged exactly as a sample of that
benchmark is (:func:`harness.evaluate.evaluate`: the generated suite, the sandbox, the
trusted comparison). A pair without tests passes this analyzer with nothing to say.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.coder.analyzers.base import AnalyzerResult, AnalyzerType, Completion
from harness.records import Sample

MAX_FAILURES_SHOWN = 5


class TestsAnalyzer:
    __test__ = False  # not a pytest class, whatever its name
    name = "tests"
    type: AnalyzerType = "critical"
    in_process = True  # the generated check modules are compiled here

    def analyze(self, candidates: Sequence[Completion]) -> list[AnalyzerResult]:
        from harness.evaluate import evaluate

        results: list[AnalyzerResult | None] = [None] * len(candidates)
        by_problem: dict[str, list[int]] = {}
        for i, candidate in enumerate(candidates):
            if candidate.problem is None:
                results[i] = AnalyzerResult(self.name, self.type, 0.0, True, "", {"tests": None})
            else:
                by_problem.setdefault(candidate.problem.task_id, []).append(i)
        for indices in by_problem.values():
            problem = candidates[indices[0]].problem
            assert problem is not None
            samples = [Sample(problem.task_id, candidates[i].program, f"coder{i}") for i in indices]
            rows = evaluate([problem], samples)
            for i, row in zip(indices, rows, strict=True):
                results[i] = _result(self.name, self.type, row)
        return [r for r in results if r is not None]


def _result(name: str, kind: AnalyzerType, row: dict) -> AnalyzerResult:
    cases = row.get("cases") or []
    passed_cases = sum(1 for c in cases if c["status"] == "passed")
    fraction = passed_cases / len(cases) if cases else 0.0
    details = {
        "status": row["status"],
        "passed_cases": passed_cases,
        "cases": len(cases),
        "error_kind": row.get("error_kind"),
    }
    if row["status"] == "error":  # the harness failed, not the completion: do not blame it
        return AnalyzerResult(name, kind, 0.0, True, "", {**details, "infra_error": True})
    if row["passed"]:
        return AnalyzerResult(name, kind, 0.0, True, "", details)
    failing = [c for c in cases if c["status"] != "passed"][:MAX_FAILURES_SHOWN]
    lines = [
        f"- {c['message'].strip().splitlines()[0] if c['message'] else c['status']}"
        for c in failing
    ]
    message = f"{passed_cases} of {len(cases)} tests pass. Failing:\n" + "\n".join(lines)
    return AnalyzerResult(name, kind, fraction - 1.0, False, message, details)
