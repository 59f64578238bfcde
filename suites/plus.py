"""``humaneval-plus`` and ``mbpp-plus``: the benchmarks with plus cases generated offline.

The problems, prompts, task ids and original checks are HumanEval's and MBPP sanitized's own
(so the same samples file scores both); each problem asks for ``harness.plus.DEFAULT_COUNT``
extra inputs, which are generated from its reference solution in the sandbox when the problems
are prepared for a run (``harness.pipeline.timeouts.prepare_problems``), only for the problems of the
requested split, and cached per problem. ``summary.json`` reports pass@k on the original checks
beside pass@k on original + plus.
"""

from __future__ import annotations

from pathlib import Path

from harness.plus import DEFAULT_COUNT, request_plus
from harness.records import Problem
from suites.humaneval import load as load_humaneval
from suites.mbpp import load_sanitized

HUMANEVAL_PLUS = "humaneval-plus"
MBPP_PLUS = "mbpp-plus"


def load_humaneval_plus(data_dir: Path | None = None) -> dict[str, list[Problem]]:
    """HumanEval's split ``test``, each problem asking for plus cases."""
    return {
        split: request_plus(problems, DEFAULT_COUNT, suite=HUMANEVAL_PLUS)
        for split, problems in load_humaneval(data_dir).items()
    }


def load_mbpp_plus(data_dir: Path | None = None) -> dict[str, list[Problem]]:
    """MBPP sanitized's splits, each problem asking for plus cases."""
    return {
        split: request_plus(problems, DEFAULT_COUNT, suite=MBPP_PLUS)
        for split, problems in load_sanitized(data_dir).items()
    }
