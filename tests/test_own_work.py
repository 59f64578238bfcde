"""benchmarks/own_work.py: the floor the EvalPlus speed benchmark compares both tools with.

It is only a floor if it runs what a tool must run and no more: every input of a program,
a program's inputs only up to the one its verdict fails on, and a program past its limit
cut there. Each is checked on a tiny problem whose inputs say, by their CPU time, whether
they ran.
"""

from __future__ import annotations

import time

import pytest

from benchmarks.own_work import (
    Job,
    compile_inputs,
    first_failure,
    least_cost_s,
    least_work_s,
    own_work_s,
    reference_limits,
    run_job,
)
from harness.records import CheckCase, Problem

REFERENCE = (
    "def spin(n):\n    total = 0\n    for i in range(n):\n        total += i\n    return total\n"
)
LOOPS_FOREVER = "def spin(n):\n    while True:\n        pass\n"


def _problem(sizes: list[int]) -> Problem:
    cases = tuple(
        CheckCase(f"case_{i}", f"spin({n})", "compare", calls=(f"candidate({n})",))
        for i, n in enumerate(sizes)
    )
    return Problem("toy", "toy/0", "", "spin", cases, REFERENCE)


def test_every_input_runs_and_costs_what_it_computes() -> None:
    problem = _problem([10, 3_000_000, 10])
    times = run_job(Job(problem, REFERENCE, limits={}))
    assert list(times) == ["case_0", "case_1", "case_2"]
    assert times["case_1"] > 20 * max(times["case_0"], times["case_2"], 1e-4)


def test_a_program_stops_after_the_case_its_verdict_fails_on() -> None:
    problem = _problem([10, 10, 3_000_000])
    times = run_job(Job(problem, REFERENCE, limits={}, stop_after="case_1"))
    assert list(times) == ["case_0", "case_1"]


def test_a_call_past_its_limit_ends_its_program_at_the_limit() -> None:
    problem = _problem([10, 10, 10])
    limits = {"case_0": 0.2, "case_1": 0.2, "case_2": 0.2}
    times = run_job(Job(problem, LOOPS_FOREVER, limits=limits))
    assert list(times) == ["case_0"]  # cut there: the later inputs do not run
    assert times["case_0"] < 1.0


def test_limits_follow_evalplus_rule_from_the_reference() -> None:
    limits = reference_limits([_problem([10, 15_000_000])], workers=1)["toy/0"]
    assert limits["case_0"] == 1.0  # the 1 s least
    assert limits["case_1"] > 1.0  # 4 x a reference that takes over a quarter second


@pytest.mark.parametrize(
    ("statuses", "expected"),
    [(["passed", "passed"], None), (["passed", "failed", "error"], "case_1")],
)
def test_first_failure_names_the_first_case_not_passed(
    statuses: list[str], expected: str | None
) -> None:
    row = {"cases": [{"case_id": f"case_{i}", "status": s} for i, s in enumerate(statuses)]}
    assert first_failure(row) == expected


def test_own_work_counts_only_the_timed_programs() -> None:
    problem = _problem([10, 10])
    seconds = own_work_s([problem], [("toy/0", REFERENCE, None)] * 4, workers=2)
    assert 0 < seconds < 5


def test_the_least_cost_of_a_verdict_is_every_input_or_the_cheapest_failed_one() -> None:
    times = {"case_0": 0.5, "case_1": 0.25, "case_2": 2.0}
    passed = dict.fromkeys(times, "passed")
    assert least_cost_s(times, passed) == 2.75  # a pass needs every input
    failed = {**passed, "case_0": "failed", "case_2": "timeout"}
    assert least_cost_s(times, failed) == 0.5  # the cheaper of the two failures
    assert least_cost_s(times, {}) == 0.25  # not judged: the least it might have cost


def test_least_work_shares_the_cpu_over_the_workers() -> None:
    problem = _problem([10, 3_000_000])
    statuses = {"case_0": "failed", "case_1": "passed"}
    wrong_first = least_work_s([problem], [("toy/0", REFERENCE, statuses)] * 2, workers=2)
    passing = dict.fromkeys(statuses, "passed")
    right = least_work_s([problem], [("toy/0", REFERENCE, passing)] * 2, workers=2)
    assert 0 <= wrong_first < right / 20  # a failure on the tiny input skips the large one


def test_an_input_text_is_parsed_before_the_clock() -> None:
    # A call whose text is long to parse and quick to run: an evaluator parses it once per
    # problem, so a program's own work must not pay for it.
    call = "candidate(len([" + "1, " * 300_000 + "]))"
    problem = Problem(
        "toy", "toy/1", "", "spin", (CheckCase("case_0", "", "compare", calls=(call,)),), REFERENCE
    )
    started = time.process_time()
    compile(call, "<input>", "eval")
    parse_s = time.process_time() - started
    compile_inputs([problem])  # here, before the fork, as the pools' parent does
    started = time.perf_counter()
    times = run_job(Job(problem, REFERENCE, limits={}))
    assert time.perf_counter() - started < parse_s / 2  # the forked child parsed nothing
    assert times["case_0"] < parse_s / 4
