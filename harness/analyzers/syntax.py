"""syntax: whether the program parses, with the line and column of the first error."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict

from harness.analyzers.base import Report, Subject
from harness.program_ast import Failure, parse_failure


class SyntaxReport(TypedDict, total=False):
    ok: bool
    line: int | None
    col: int | None
    message: str


class SyntaxAnalyzer:
    name = "syntax"
    version = "2"  # 2: programs too long or too deep to analyze are not read
    static = True
    per_program = True  # a parse and a walk: the same cost alone or in a batch

    def analyze(self, subjects: Sequence[Subject]) -> list[Report]:
        return [dict(syntax_report(s.parse_failure)) for s in subjects]


def check_syntax(program: str) -> SyntaxReport:
    return syntax_report(parse_failure(program))


def syntax_report(failure: Failure | None) -> SyntaxReport:
    if failure is None:
        return {"ok": True, "line": None, "col": None, "message": ""}
    line, col, message = failure
    return {"ok": False, "line": line, "col": col, "message": message}
