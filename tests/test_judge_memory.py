"""A process that judges samples keeps nothing of them once their rows are built: the decoded
values of every sample judged would otherwise stay alive in the loaded suite, growing with the
run and walked again by every full collection of the garbage collector."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from harness.evaluate import evaluate
from harness.pipeline.judge import judge_suite
from harness.pipeline.runtime import loaded_suite
from harness.records import CheckCase, Problem, Sample


def _problem() -> Problem:
    cases = tuple(
        CheckCase(
            case_id=f"c{i}",
            source=f"assert candidate({i}) == [{i}] * 1000",
            mode="compare",
            calls=(f"candidate({i})",),
            check=f"assert v[0] == [{i}] * 1000",
        )
        for i in range(4)
    )
    return Problem("s", "T/0", "def f(n):\n", "f", cases, "    return [n] * 1000\n")


def _samples() -> list[Sample]:
    right = "def f(n):\n    return [n] * 1000\n"
    wrong = "def f(n):\n    return [n] * 999\n"
    return [Sample("T/0", right if i % 2 else wrong, f"s{i}") for i in range(6)]


def test_judged_samples_leave_no_execution_behind(tmp_path: Path) -> None:
    rows = evaluate([_problem()], _samples(), out_dir=tmp_path)
    assert [row["passed"] for row in rows] == [i % 2 == 1 for i in range(6)]
    suite = loaded_suite(tmp_path / "suite")
    assert suite.kept_executions() == 0
    # Judged again in this process, from the compiled folder: the same rows, nothing kept.
    again = judge_suite(tmp_path / "suite")
    assert [row["passed"] for row in again] == [row["passed"] for row in rows]
    assert suite.kept_executions() == 0


@pytest.mark.parametrize("enabled", [True, False])
def test_judging_leaves_the_collector_as_it_found_it(tmp_path: Path, enabled: bool) -> None:
    (gc.enable if enabled else gc.disable)()
    try:
        evaluate([_problem()], _samples()[:2], out_dir=tmp_path)
        assert gc.isenabled() is enabled
    finally:
        gc.enable()
