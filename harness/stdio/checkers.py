"""Compare a program's output with the expected one, as judges do (in the trusted process).

Every function here is pure: text in, a :class:`Comparison` out. Nothing the program printed is
ever run or trusted; a program passes a test only when its output matches the expected output
under the problem's :class:`~harness.stdio.problem.Checker`. The special judge, which is a
program, is run elsewhere (:mod:`harness.stdio.special`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from harness.stdio.problem import Checker

DIFF_CHARS = 60  # how much of each side a wrong answer's message shows
# What judges (testlib's checkers) skip between tokens: space, tab, CR, LF. Not Python's
# str.split() set: a no-break space, \x0b, \x1c or \u2003 is part of a token there.
BLANKS = " \t\r\n"
_BLANK_RUN = re.compile(f"[{BLANKS}]+")
# A number as judges read one: ASCII digits only (float() also takes "١٢٣", "1_0", "nan").
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)


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
    got, want = tokens(output), tokens(expected)
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


def tokens(text: str) -> list[str]:
    """The tokens of ``text``, split where a judge splits (:data:`BLANKS`)."""
    text = text.strip(BLANKS)
    return _BLANK_RUN.split(text) if text else []


def presentation_matches(output: str, expected: str) -> bool:
    """Whether the outputs differ only in whitespace (a judge's "presentation error")."""
    return output != expected and tokens(output) == tokens(expected)


def _exact(output: str, expected: str) -> Comparison:
    got, want = output.rstrip(BLANKS), expected.rstrip(BLANKS)
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
        + (" (whitespace differs)" if tokens(got) == tokens(want) else ""),
    )


def _close(a: str, b: str, abs_tol: float, rel_tol: float) -> bool:
    """Both numbers as judges write them, equal within either tolerance."""
    if not (_NUMBER.fullmatch(a) and _NUMBER.fullmatch(b)):
        return False
    x, y = float(a), float(b)
    if math.isnan(x) or math.isnan(y):
        return False
    if math.isinf(x) or math.isinf(y):
        return x == y
    return abs(x - y) <= abs_tol or abs(x - y) <= rel_tol * abs(y)


def _cut(text: str) -> str:
    shown = text if len(text) <= DIFF_CHARS else text[:DIFF_CHARS] + "..."
    return repr(shown)
