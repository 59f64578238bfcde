"""Rewards for stdio problems, named by the presets ``configs/rewards/stdio_*.yaml``.

Each is a reward aggregator (``aggregator: harness.stdio.rewards:NAME``), called with a result
row (its ``cases``: one per test, ``public_N`` or ``hidden_N``, with the judge's verdict in a
failed case's message) and returning named parts in [0, 1]:

* :func:`fraction`: the share of tests passed (partial credit: score a problem's
  :func:`~harness.stdio.problem.training_view`, which runs every test);
* :func:`all_pass`: 1 when every test passed;
* :func:`levels`: a quarter each for compiling (or parsing), running (some test ended with an
  answer: passed, or a wrong answer rather than a crash or a time-out), passing every public
  test and passing every hidden test.

Call-based problems in the same suites (the value path) have the same case ids, so the same
presets score them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.records import Problem

_COMPILE_FAILURES = ("compile error", "compilation timed out", "the compiler was killed")
# A failed test whose message names one of these did not end with an answer.
_NO_ANSWER = (
    "runtime_error", "time_limit", "memory_limit", "output_limit", "not run",
    "candidate raised", "timed out", "killed", "exited", *_COMPILE_FAILURES,
)  # fmt: skip


def fraction(
    row: Mapping[str, Any], problem: Problem, analyzers: Mapping[str, Any], params: Any
) -> dict[str, float]:
    cases = _cases(row)
    passed = sum(1 for c in cases if c.get("status") == "passed")
    return {"tests": passed / len(cases) if cases else 0.0}


def all_pass(
    row: Mapping[str, Any], problem: Problem, analyzers: Mapping[str, Any], params: Any
) -> dict[str, float]:
    cases = _cases(row)
    return {"tests": 1.0 if cases and all(c.get("status") == "passed" for c in cases) else 0.0}


def levels(
    row: Mapping[str, Any], problem: Problem, analyzers: Mapping[str, Any], params: Any
) -> dict[str, float]:
    cases = _cases(row)
    compiled = bool(cases) and not any(_compile_failure(c) for c in cases)
    ran = compiled and any(_answered(c) for c in cases)
    public = [c for c in cases if str(c.get("case_id", "")).startswith("public_")]
    hidden = [c for c in cases if not str(c.get("case_id", "")).startswith("public_")]
    passes_public = ran and all(c.get("status") == "passed" for c in public)
    passes_hidden = passes_public and all(c.get("status") == "passed" for c in hidden)
    return {
        "compiles": 0.25 if compiled else 0.0,
        "runs": 0.25 if ran else 0.0,
        "public": 0.25 if passes_public else 0.0,
        "hidden": 0.25 if passes_hidden else 0.0,
    }


def _cases(row: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [c for c in row.get("cases") or [] if isinstance(c, Mapping)]


def _compile_failure(case: Mapping[str, Any]) -> bool:
    message = str(case.get("message", ""))
    return any(marker in message for marker in _COMPILE_FAILURES)


def _answered(case: Mapping[str, Any]) -> bool:
    """The program ran to an answer on this test: passed, or printed (a call-based program:
    returned) a wrong one, rather than crashing, timing out or not running."""
    if case.get("status") == "passed":
        return True
    message = str(case.get("message", ""))
    return case.get("status") == "failed" and not any(m in message for m in _NO_ANSWER)
