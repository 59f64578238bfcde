"""Problem steps: what a product does to a batch's problems before their time limits are set.

A product registers a step when it is imported (``harness.plus`` adds the plus cases it was
asked for: they need the reference run in the sandbox, and they must be calibrated like the
other cases). :func:`harness.pipeline.prepare.prepare_suite` runs every registered step, in
the order registered, right before calibration.
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


_steps: dict[str, ProblemStep] = {}


def register_problem_step(name: str, step: ProblemStep) -> None:
    """Add (or replace) the step called ``name``."""
    _steps[name] = step


def run_problem_steps(problems: Sequence[Problem], sandbox: Sandbox) -> list[Problem]:
    """``problems`` after every registered step."""
    load_extensions()
    result = list(problems)
    for step in _steps.values():
        result = step(result, sandbox)
    return result
