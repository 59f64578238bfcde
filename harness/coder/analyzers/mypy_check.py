"""mypy (critical): type errors in the completed program, through the harness's ``types`` analyzer.

The whole program (user code + completion) goes to mypy, once per batch of completions, with
the settings and cache of :mod:`harness.analyzers.types_check`. Errors on lines of the user's
own code are left out: the model is asked to complete that code, not to fix it.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.analyzers import Subject, run_analyzers
from harness.coder.analyzers.base import AnalyzerResult, AnalyzerType, Completion, syntax_failure


class MypyAnalyzer:
    name = "mypy"
    type: AnalyzerType = "critical"
    in_process = True  # mypy parses with ``ast``: never beside another parsing thread

    def analyze(self, candidates: Sequence[Completion]) -> list[AnalyzerResult]:
        subjects = [Subject(row={}, problem=None, program=c.program) for c in candidates]
        reports = run_analyzers(subjects, ["types"])
        results = []
        for candidate, subject, report in zip(candidates, subjects, reports, strict=True):
            if subject.tree is None:
                results.append(syntax_failure(self.name, self.type, candidate))
                continue
            found = report["types"]
            if "error" in found:  # mypy itself failed: say so, do not blame the completion
                results.append(
                    AnalyzerResult(self.name, self.type, 0.0, True, "", {"error": found["error"]})
                )
                continue
            errors = [e for e in found.get("errors", []) if e["line"] >= candidate.first_line]
            lines = [f"line {e['line']}: {e['message']}" for e in errors]
            message = (
                "The completion has these type errors (mypy):\n" + "\n".join(lines)
                if errors
                else ""
            )
            results.append(
                AnalyzerResult(
                    self.name,
                    self.type,
                    -float(len(errors)),
                    not errors,
                    message,
                    {
                        "errors": errors,
                        "ignored_user_code_errors": len(found["errors"]) - len(errors),
                    },
                )
            )
        return results
