"""The coder's analyzers, one per module; :func:`make_analyzers` builds them by name.

=============  ===========  ==================================================================
name           type         what it checks
=============  ===========  ==================================================================
mypy           critical     type errors in the completed program (mypy)
signature      critical     calls whose arguments fit none of the callee's signatures (jedi)
hallucination  critical     names taken from imported modules that do not exist
tests          critical     the pair's tests, run in the sandbox (pairs with tests only)
score          informative  an LLM judge's rating (needs ``judge_model``)
=============  ===========  ==================================================================
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.coder.analyzers.base import (
    AnalyzerResult,
    AnalyzerType,
    CoderAnalyzer,
    Completion,
)
from harness.coder.analyzers.hallucination import HallucinationAnalyzer
from harness.coder.analyzers.mypy_check import MypyAnalyzer
from harness.coder.analyzers.score import ScoreAnalyzer
from harness.coder.analyzers.signature import SignatureAnalyzer
from harness.coder.analyzers.tests_run import TestsAnalyzer

ANALYZER_NAMES: tuple[str, ...] = ("mypy", "signature", "hallucination", "tests", "score")

__all__ = [
    "ANALYZER_NAMES",
    "AnalyzerResult",
    "AnalyzerType",
    "CoderAnalyzer",
    "Completion",
    "make_analyzers",
]


def make_analyzers(names: Sequence[str], judge_model: str | None = None) -> list[CoderAnalyzer]:
    """The analyzers named, in order; an unknown name is a ``ValueError`` that lists the known."""
    made: list[CoderAnalyzer] = []
    for name in names:
        if name == "mypy":
            made.append(MypyAnalyzer())
        elif name == "signature":
            made.append(SignatureAnalyzer())
        elif name == "hallucination":
            made.append(HallucinationAnalyzer())
        elif name == "tests":
            made.append(TestsAnalyzer())
        elif name == "score":
            made.append(ScoreAnalyzer(judge_model))
        else:
            raise ValueError(
                f"unknown analyzer {name!r}: expected one of {', '.join(ANALYZER_NAMES)}"
            )
    return made
