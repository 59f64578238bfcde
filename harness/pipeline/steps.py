"""Problem steps: what a product does to a batch's problems before their time limits are set.

A product registers a step when it is imported (``harness.plus`` adds the plus cases it was
asked for: they need the reference run in the sandbox, and they must be calibrated like the
other cases). :func:`harness.pipeline.prepare.prepare_suite` runs every registered step right
before calibration, by its ``order`` and then its name, never by which module was imported
first: a suite's own data (EvalPlus's expected outputs, order 10) before what products add
(the plus cases, the default 50).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from harness.extensions import load_extensions
from harness.records import Problem
from harness.sandbox import Sandbox


class ProblemStep(Protocol):
    """Returns the problems, changed where the step applies (others returned as they were)."""

    def __call__(self, problems: Sequence[Problem], sandbox: Sandbox) -> list[Problem]: ...


DEFAULT_ORDER = 50
_steps: dict[str, tuple[int, ProblemStep]] = {}


def register_problem_step(name: str, step: ProblemStep, order: int = DEFAULT_ORDER) -> None:
    """Add (or replace) the step called ``name``; lower ``order`` runs first."""
    _steps[name] = (order, step)


def run_problem_steps(problems: Sequence[Problem], sandbox: Sandbox) -> list[Problem]:
    """``problems`` after every registered step, in order."""
    load_extensions()
    result = list(problems)
    for name in sorted(_steps, key=lambda n: (_steps[n][0], n)):
        result = _steps[name][1](result, sandbox)
    return result
