"""Per-case limits from the reference runtime: a multiple with a floor, override and cap.

Where the reference timings come from (and when they are trusted): test_reference_calibration.py.
"""

from hypothesis import given
from hypothesis import strategies as st

from harness.pipeline.timeouts import with_timeouts
from harness.records import CheckCase, Problem

PROBLEM = Problem(
    suite="toy",
    task_id="toy/0",
    prompt="",
    entry_point="f",
    reference="def f():\n    return 1\n",
    cases=(
        CheckCase("case_0", "assert f() == 1", "compare"),
        CheckCase("case_1", "assert f()", "compare"),
    ),
)


def limits(problem: Problem) -> list[float]:
    return [c.timeout_s for c in problem.cases]


def test_multiple_of_the_reference_with_a_floor() -> None:
    timed = with_timeouts(PROBLEM, {"case_0": 0.001, "case_1": 0.5})
    assert limits(timed) == [1.0, 5.0]
    assert timed.metadata["reference_durations"] == {"case_0": 0.001, "case_1": 0.5}


def test_override_replaces_and_cap_only_lowers() -> None:
    durations = {"case_0": 0.001, "case_1": 0.5}
    assert limits(with_timeouts(PROBLEM, durations, override_s=0.25)) == [0.25, 0.25]
    assert limits(with_timeouts(PROBLEM, durations, cap_s=3)) == [1.0, 3.0]


def test_a_case_without_a_trusted_timing_gets_ten_times_the_floor() -> None:
    """No timing (the reference failed, or the sandbox could not run it) is not a fast case:
    the old cache's zeros gave the 1 s floor, and a slow reference then timed out."""
    timed = with_timeouts(PROBLEM, {"case_1": 0.5})
    assert limits(timed) == [10.0, 5.0]
    assert limits(with_timeouts(PROBLEM, {}, cap_s=3)) == [3.0, 3.0]


@given(st.floats(0, 100), st.floats(0, 100))
def test_limits_never_fall_below_the_floor_without_an_override(a: float, b: float) -> None:
    assert min(limits(with_timeouts(PROBLEM, {"case_0": a, "case_1": b}))) >= 1.0
