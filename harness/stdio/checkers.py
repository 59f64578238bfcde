"""Compare a program's output with the expected one, as judges do (in the trusted process).

Every function here is pure: text in, a :class:`Comparison` out. Nothing the program printed is
ever run or trusted; a program passes a test only when its output matches the expected output
under the problem's :class:`~harness.stdio.problem.Checker`. The special judge, which is a
program, is run elsewhere (:mod:`harness.stdio.special`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from harness.stdio.problem import Checker

DIFF_CHARS = 60  # how much of each side a wrong answer's message shows


@dataclass(frozen=True)
class Comparison:
    """The checker's answer: passed, and for a wrong answer a short message with the diff."""

    passed: bool
    message: str = ""


def compare(output: str, expected: str, checker: Checker) -> Comparison:
    """``output`` against ``expected`` under ``checker`` (``tokens``, ``float`` or ``exact``)."""
    if checker.kind == "special":
        raise ValueError("a special judge is a program: harness.stdio.special runs it")
    if checker.case_insensitive:
        output, expected = output.lower(), expected.lower()
    if checker.kind == "exact":
        return _exact(output, expected)
    got, want = output.split(), expected.split()
    for index, (a, b) in enumerate(zip(got, want, strict=False)):
        if a == b:
            continue
        if checker.kind == "float" and _close(a, b, checker.abs_tol, checker.rel_tol):
            continue
        return Comparison(False, f"token {index + 1}: expected {_cut(b)}, got {_cut(a)}")
    if len(got) != len(want):
        side = "more" if len(got) > len(want) else "fewer"
        extra = f" (next: {_cut(got[len(want)])})" if len(got) > len(want) else ""
        return Comparison(
            False, f"{side} tokens than expected: got {len(got)}, expected {len(want)}{extra}"
        )
    return Comparison(True)


def presentation_matches(output: str, expected: str) -> bool:
    """Whether the outputs differ only in whitespace (a judge's "presentation error")."""
    return output != expected and output.split() == expected.split()


def _exact(output: str, expected: str) -> Comparison:
    got, want = output.rstrip(), expected.rstrip()
    if got == want:
        return Comparison(True)
    at = next(
        (i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b),
        min(len(got), len(want)),
    )
    line = got.count("\n", 0, at) + 1
    return Comparison(
        False,
        f"line {line}: expected {_cut(want[at:])}, got {_cut(got[at:])}"
        + (" (whitespace differs)" if got.split() == want.split() else ""),
    )


def _close(a: str, b: str, abs_tol: float, rel_tol: float) -> bool:
    """Both numbers, equal within either tolerance (NaN and infinities only equal themselves)."""
    try:
        x, y = float(a), float(b)
    except ValueError:
        return False
    if math.isnan(x) or math.isnan(y):
        return False
    if math.isinf(x) or math.isinf(y):
        return x == y
    return abs(x - y) <= abs_tol or abs(x - y) <= rel_tol * abs(y)


def _cut(text: str) -> str:
    shown = text if len(text) <= DIFF_CHARS else text[:DIFF_CHARS] + "..."
    return repr(shown)
