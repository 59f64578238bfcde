"""The stdio checkers (trusted comparison) and the problem shape: pure functions, no sandbox."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.records import problem_from_json, to_json
from harness.stdio.checkers import compare, presentation_matches
from harness.stdio.problem import (
    CallTest,
    Checker,
    StdioTest,
    is_stdio,
    stdio_problem,
    stdio_spec,
    training_view,
)

TOKENS = Checker()
token = st.text(alphabet="abcXYZ0123456789-.", min_size=1, max_size=8)
spaces = st.sampled_from([" ", "  ", "\n", "\t", " \n", "\r\n"])


@given(st.lists(token, min_size=1, max_size=20), st.data())
def test_tokens_ignore_how_whitespace_is_laid_out(tokens: list[str], data: st.DataObject) -> None:
    expected = " ".join(tokens) + "\n"
    separators = data.draw(st.lists(spaces, min_size=len(tokens), max_size=len(tokens)))
    output = "".join(t + s for t, s in zip(tokens, separators, strict=True))
    assert compare(output, expected, TOKENS).passed


@given(st.lists(token, min_size=1, max_size=20), st.data())
def test_one_changed_missing_or_extra_token_fails(tokens: list[str], data: st.DataObject) -> None:
    expected = "\n".join(tokens)
    index = data.draw(st.integers(0, len(tokens) - 1))
    how = data.draw(st.sampled_from(["change", "drop", "add"]))
    got = list(tokens)
    if how == "change":
        got[index] = got[index] + "z"
    elif how == "drop":
        del got[index]
    else:
        got.insert(index, "extra")
    result = compare(" ".join(got), expected, TOKENS)
    assert not result.passed and result.message


def test_a_wrong_answer_says_where_and_what() -> None:
    result = compare("1 2 4\n", "1 2 3\n", TOKENS)
    assert result.message == "token 3: expected '3', got '4'"
    assert "fewer tokens" in compare("1 2", "1 2 3", TOKENS).message
    assert "more tokens" in compare("1 2 3 4", "1 2 3", TOKENS).message


@given(
    st.floats(-1e6, 1e6, allow_nan=False),
    st.floats(-0.9, 0.9),
)
def test_floats_within_the_tolerance_pass_and_beyond_fail(value: float, share: float) -> None:
    checker = Checker("float", abs_tol=1e-6, rel_tol=1e-6)
    close = value + share * max(1e-6, 1e-6 * abs(value))
    assert compare(f"{close!r}", f"{value!r}", checker).passed
    far = value + 3 * max(1e-6, 1e-6 * abs(value)) + 1e-3
    assert not compare(f"{far!r}", f"{value!r}", checker).passed
    assert not compare(f"{close!r}", f"{value!r}", TOKENS).passed or close == value


def test_float_checker_leaves_words_and_special_values_exact() -> None:
    checker = Checker("float")
    assert compare("YES 0.3333333", "YES 0.333333333", checker).passed
    assert not compare("NO 0.3333333", "YES 0.333333333", checker).passed
    assert compare("nan", "nan", checker).passed  # the same text, as testlib accepts it
    assert not compare("nan", "0.0", checker).passed
    assert compare("inf", "inf", checker).passed
    assert not compare("1e308", "inf", checker).passed


def test_case_insensitive_option() -> None:
    assert compare("yes\n", "YES\n", Checker(case_insensitive=True)).passed
    assert not compare("yes\n", "YES\n", TOKENS).passed
    assert compare("Yes", "YES", Checker("exact", case_insensitive=True)).passed


def test_exact_checker_and_presentation_errors() -> None:
    exact = Checker("exact")
    assert compare("1 2\n3\n\n", "1 2\n3\n", exact).passed  # trailing whitespace only
    result = compare("1  2\n3\n", "1 2\n3\n", exact)
    assert not result.passed and "whitespace differs" in result.message
    assert presentation_matches("1  2\n3", "1 2\n3")
    assert not presentation_matches("1 2\n4", "1 2\n3")


def test_the_constructor_builds_one_case_per_test_and_round_trips_json() -> None:
    tests = [StdioTest("1\n", "1\n"), StdioTest("2\n", "4\n", hidden=True)]
    problem = stdio_problem(
        "s", "s/1", "Square it.", tests, language="rs", checker=Checker("float"), time_limit_s=1.5
    )
    assert [c.case_id for c in problem.cases] == ["public_1", "hidden_1"]
    assert problem.metadata["language"] == "stdio-rs" and is_stdio(problem)
    again = problem_from_json(to_json(problem))
    spec = stdio_spec(again)
    assert spec.tests == tuple(tests) and spec.time_limit_s == 1.5
    assert spec.checker.kind == "float" and spec.stop_at_first_failure
    assert "stdin:\n2\nexpected stdout:\n4" in problem.cases[1].source


def test_bad_problems_are_refused_with_the_task_named() -> None:
    with pytest.raises(ValueError, match="s/2.*language 'cobol'"):
        stdio_problem("s", "s/2", "x", [StdioTest("", "")], language="cobol")
    with pytest.raises(ValueError, match="s/3.*at least one test"):
        stdio_problem("s", "s/3", "x", [])
    with pytest.raises(ValueError, match="s/4.*judge program"):
        stdio_problem("s", "s/4", "x", [StdioTest("", "")], checker=Checker("special"))
    with pytest.raises(TypeError, match="s/5"):
        stdio_problem("s", "s/5", "x", [CallTest((1,), 2)])


def test_call_based_problems_use_the_value_path() -> None:
    problem = stdio_problem(
        "s", "s/6", "Add.", [CallTest((1, 2), 3), CallTest((0.1, 0.2), 0.3)], fn_name="add"
    )
    assert problem.entry_point == "add" and not is_stdio(problem)
    assert problem.cases[0].calls == ("add(*(1, 2))",)
    assert "abs(v[0] - 0.3)" in problem.cases[1].check  # floats within a tolerance


def test_training_view_runs_every_test_and_keeps_the_largest_inputs() -> None:
    tests = [StdioTest("x" * n + "\n", "1\n", hidden=n > 1) for n in (3, 1, 7, 5, 2)]
    problem = stdio_problem("s", "s/7", "x", tests)
    view = training_view(problem, largest=2)
    spec = stdio_spec(view)
    assert [len(t.input) for t in spec.tests] == [8, 6]  # data order kept
    assert [c.case_id for c in view.cases] == ["hidden_2", "hidden_3"]
    assert not spec.stop_at_first_failure
    assert len(training_view(problem).cases) == 5


@pytest.mark.parametrize(
    ("expected", "good", "bad"),
    [
        (0.3, 0.30000001, 0.31),
        (float("inf"), float("inf"), 1e308),
        (True, True, 1),
        ([1, 2], (1, 2), [2, 1]),
        ("a", "a", "A"),
    ],
)
def test_call_based_value_checks(expected: object, good: object, bad: object) -> None:
    """The trusted check of a returned value: floats within 1e-6, booleans by identity,
    tuples as JSON lists; run as the generated module runs it."""
    from harness.stdio.problem import value_check

    check = value_check(expected)
    exec(check, {"v": [good]})
    with pytest.raises(AssertionError):
        exec(check, {"v": [bad]})
