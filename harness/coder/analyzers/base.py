"""What a coder analyzer is: it reads one completion of the user's code and gives a verdict.

Each analyzer returns an :class:`AnalyzerResult`: its type (``critical`` analyzers must pass
for the search to stop; ``informative`` ones only add to the score), a score (0 is best, lower
is worse; the search ranks conversations by the sum), a pass flag and a message written for the
model, which the feedback loop sends back. Analyzers only *parse* the candidate's program; the
``tests`` analyzer runs it in the harness's sandbox and ``hallucination`` imports installed
modules (never the candidate's code) in a sandbox child.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol

from harness.program_ast import parse_failure, parse_program
from harness.records import Problem

AnalyzerType = Literal["critical", "informative"]


@dataclass(frozen=True)
class Completion:
    """One candidate: the user's unfinished ``code``, the model's ``completion`` and the pair's
    problem (when it has tests)."""

    code: str
    completion: str
    problem: Problem | None = None

    @property
    def program(self) -> str:
        return self.code + self.completion

    @property
    def first_line(self) -> int:
        """The 1-based line where the completion starts: messages about earlier lines concern
        the user's code, not the model's."""
        return self.code.count("\n") + 1

    def tree(self) -> ast.Module | None:
        return parse_program(self.program)


@dataclass
class AnalyzerResult:
    """One analyzer's verdict on one completion."""

    name: str
    type: AnalyzerType
    score: float
    passed: bool
    message: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AnalyzerResult:
        return cls(**data)


class CoderAnalyzer(Protocol):
    """One verdict per candidate, over a batch (one mypy run, one sandbox probe per batch).
    ``in_process``: the analyzer parses in this process (see :meth:`Coder._analyze`)."""

    name: str
    type: AnalyzerType
    in_process: bool

    def analyze(self, candidates: Sequence[Completion]) -> list[AnalyzerResult]: ...


def syntax_failure(name: str, kind: AnalyzerType, candidate: Completion) -> AnalyzerResult:
    """The verdict of a parsing analyzer on a program that does not parse."""
    failure = parse_failure(candidate.program)
    if failure is None:  # pragma: no cover - callers only ask when parsing failed
        message = ""
    else:
        line, _, why = failure
        where = f"line {line}" if line else "the program"
        message = f"The completed code does not parse: {why} ({where})."
    return AnalyzerResult(name, kind, -1.0, False, message, {"syntax_error": True})
