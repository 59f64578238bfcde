"""Tests that come with data (inline problems, ``jsonl:`` suites) never run in the trusted process.

Their module-level code and any check that is not a pure comparison used to run in the pytest
process or the reward engine, as root: a data set's ``open('/tmp/...', 'w')`` wrote as root, and
its helpers ran unconfined. Now (harness.pipeline.data_tests) pure checks stay in the trusted process and
everything else runs in the judge, confined like the candidate; verdicts stay what they were.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.evaluate import evaluate
from harness.pipeline.data_tests import FROM_DATA, confine_data_tests, judged_statement, pure_check
from harness.records import CheckCase, Sample
from suites.jsonl_suite import load_jsonl


@pytest.mark.parametrize(
    "check",
    [
        "assert v[0] == 3",
        "assert v[0] == [1, (2, 'x')]",
        "assert abs(v[0] - 2.5) < 1e-06",
        "assert math.isclose(v[0], 0.5, rel_tol=0.001)",
        "assert set(v[0]) == {1, 2}",
        "assert sorted(v[0]) == sorted(v[1])",
        "assert not v[0]",
        "assert v[0] is None, 'a message'",
        "assert v[0][1:] == 'bc' and len(v[0]) == 3",
    ],
)
def test_pure_checks_stay_in_the_trusted_process(check: str) -> None:
    assert pure_check(check)


@pytest.mark.parametrize(
    "check",
    [
        "assert v[0] == helper(3)",  # a function the data defines
        "assert v[0] == 'a' * 10 ** 9",  # a memory bomb built from literals
        "assert v[0] == 2 ** 10 ** 8",
        "assert v[0] == [x for x in range(3)]",
        "assert v[0] == __import__('os').getuid()",
        "assert v[0] == open('/etc/passwd').read()",
        "assert v[0] == math.__loader__",
        "assert v[0] == (lambda: 1)()",
        "assert v[0] == " + repr("x" * (2 << 20)),
        "x = 1",
    ],
)
def test_other_checks_are_judged(check: str) -> None:
    assert not pure_check(check)


# A check over literals and the values, in its compare form and as the judge runs it.
LITERALS = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.tuples(inner, inner),
    max_leaves=6,
)


@settings(max_examples=200, deadline=None)
@given(
    values=st.lists(LITERALS, min_size=1, max_size=3),
    expected=LITERALS,
    op=st.sampled_from(["==", "!=", "in", "not in"]),
)
def test_the_judged_form_of_a_check_means_what_the_compare_form_does(
    values: list, expected: object, op: str
) -> None:
    if op.endswith("in") and not isinstance(expected, (list, tuple, str)):
        expected = [expected]
    check = f"assert v[{len(values) - 1}] {op} {expected!r}"
    case = CheckCase(
        "c", "", "compare", calls=tuple(f"f({i})" for i in range(len(values))), check=check
    )
    statement = judged_statement(case)
    assert "v[" not in statement

    def outcome(code: str, scope: dict) -> bool:
        try:
            exec(code, scope)
        except (AssertionError, TypeError):
            return False
        return True

    compare = outcome(check, {"v": values})
    judged = outcome(statement, {"f": values.__getitem__, "__plain__": lambda x: x})
    assert compare == judged


HOST_MARK = Path("/tmp") / f"codeeval-data-ran-here-{secrets.token_hex(6)}"
# The data's module-level code writes where the trusted process could; a helper does too.
TEST_MODULE = f"""
import os

try:
    open({str(HOST_MARK)!r}, "w").write(str(os.getuid()))
except OSError:
    pass


def helper(x):
    try:
        open({str(HOST_MARK)!r} + "-helper", "w").write(str(os.getuid()))
    except OSError:
        pass
    return x + 1


def check(candidate):
    assert candidate(1) == 2
    assert candidate(2) == helper(2)
    assert abs(candidate(0) - 1.0) < 1e-9
"""


def _problems(tmp_path: Path):
    line = {
        "task_id": "mine/inc",
        "prompt": "def inc(x):\n",
        "entry_point": "inc",
        "test": TEST_MODULE,
        "canonical_solution": "    return x + 1\n",
    }
    path = tmp_path / "problems.jsonl"
    path.write_text(json.dumps(line) + "\n")
    return load_jsonl(path)


def test_a_jsonl_suites_cases_are_confined(tmp_path: Path) -> None:
    (problem,) = _problems(tmp_path)
    assert problem.metadata[FROM_DATA]
    assert [c.mode for c in problem.cases] == ["compare", "sandbox", "compare"]
    assert confine_data_tests(problem).cases == problem.cases  # idempotent


def test_a_data_sets_code_never_runs_in_the_trusted_process(
    sandbox_mode: str, tmp_path: Path
) -> None:
    problems = _problems(tmp_path)
    samples = [
        Sample("mine/inc", "    return x + 1\n", "right"),
        Sample("mine/inc", "    return x + 2\n", "wrong"),
    ]
    try:
        rows = evaluate(problems, samples, out_dir=tmp_path / "out")
        assert [r["passed"] for r in rows] == [True, False]
        assert [c["status"] for c in rows[0]["cases"]] == ["passed"] * 3
        assert not HOST_MARK.exists() and not Path(f"{HOST_MARK}-helper").exists()
    finally:
        for path in (HOST_MARK, Path(f"{HOST_MARK}-helper")):
            if path.exists():
                path.unlink()


def test_an_inline_problems_tests_never_run_in_the_reward_engine() -> None:
    from harness.rewardapi import RewardEngine

    problem = {"prompt": "def inc(x):\n", "tests": TEST_MODULE, "entry_point": "inc"}
    items = [
        {"problem": problem, "completion": "    return x + 1\n"},
        {"problem": problem, "completion": "    return x + 2\n"},
    ]
    try:
        rows = RewardEngine(workers=0).score(items)
        assert [r["passed"] for r in rows] == [True, False]
        assert not HOST_MARK.exists() and not Path(f"{HOST_MARK}-helper").exists()
    finally:
        for path in (HOST_MARK, Path(f"{HOST_MARK}-helper")):
            if path.exists():
                path.unlink()
