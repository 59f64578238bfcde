"""``apps-mini`` (the offline stdio suite), the stdio reward presets, and a real pytest session.

The loader reads the shared mirror (``$CODEEVAL_DATA_DIR/apps_mapcoder150``); bad rows are
tried on small files written here in the same schema.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.reward import load_reward_config
from harness.reward.score import reward_fields
from harness.stdio.problem import is_stdio, stdio_spec
from suites.apps_mini import load
from suites.errors import SuiteError
from suites.stdio_data import StdioDataError


@pytest.fixture(scope="module")
def splits(shared_data: Path) -> dict:
    if not (shared_data / "apps_mapcoder150" / "selected150.jsonl").is_file():
        pytest.skip("apps_mapcoder150 is not in the data folder")
    return load(shared_data)


def test_apps_mini_has_the_128_unique_problems(splits: dict) -> None:
    problems = splits["test"]
    assert len(problems) == 128 and len({p.task_id for p in problems}) == 128
    stdio = [p for p in problems if is_stdio(p)]
    calls = [p for p in problems if p.metadata.get("call_based")]
    assert (len(stdio), len(calls)) == (49, 79)
    assert all(p.metadata["hide_paths"] for p in problems)  # the mirror is hidden from programs
    total = sum(len(p.cases) for p in problems)
    assert total == 1602  # the README's count over the unique problems


def test_known_defects_are_data_errors(splits: dict) -> None:
    defects = {p.task_id: p.defects for p in splits["test"] if p.defects}
    lossy = [t for t, d in defects.items() if any("lossy conversion" in x for x in d)]
    several = [t for t, d in defects.items() if any("several answers" in x for x in d)]
    assert sorted(lossy) == ["apps-mini/1613", "apps-mini/1617"]
    assert len(several) == 5 and "apps-mini/2187" in several


def test_call_based_lines_become_arguments_again(splits: dict) -> None:
    by_id = {p.task_id: p for p in splits["test"]}
    first = by_id["apps-mini/3554"].cases[0]
    assert first.calls == ("get_score(*([1],))",) and first.check == "assert v[0] == 100"
    drop_cap = by_id["apps-mini/4724"]  # a string argument stays text, '' included
    assert any(c.calls == ("drop_cap(*('',))",) for c in drop_cap.cases)
    assert drop_cap.metadata["prompt_kind"] == "text"


def test_train_split_runs_every_test_of_the_largest_inputs(splits: dict) -> None:
    train = {p.task_id: p for p in splits["train"] if is_stdio(p)}
    for problem in splits["test"]:
        if not is_stdio(problem):
            continue
        spec, view = stdio_spec(problem), stdio_spec(train[problem.task_id])
        assert spec.stop_at_first_failure and not view.stop_at_first_failure
        assert len(view.tests) == min(15, len(spec.tests))
        smallest_kept = min(len(t.input) for t in view.tests)
        dropped = [t for t in spec.tests if t not in view.tests]
        assert all(len(t.input) <= smallest_kept for t in dropped)


def test_other_languages_take_the_stdio_problems(shared_data: Path, splits: dict) -> None:
    cpp = load(shared_data, "cpp")["test"]
    assert len(cpp) == 49 and {p.metadata["language"] for p in cpp} == {"stdio-cpp"}
    assert cpp[0].suite == "apps-mini@cpp"


def test_the_stdio_suites_options_apply(shared_data: Path, splits: dict) -> None:
    """``partial`` and ``largestN``, as for the other stdio suites (an unknown one is named)."""
    few = load(shared_data, "cpp@largest5")["test"]
    assert {len(p.cases) for p in few} == {5} and few[0].suite == "apps-mini@cpp@largest5"
    every = [p for p in load(shared_data, "partial")["test"] if is_stdio(p)]
    assert not any(stdio_spec(p).stop_at_first_failure for p in every)
    with pytest.raises(SuiteError, match="unknown option 'bogus'.*largestN"):
        load(shared_data, "bogus")


def test_bad_rows_name_the_file_line_and_field(tmp_path: Path) -> None:
    folder = tmp_path / "apps_mapcoder150"
    folder.mkdir()
    good = {
        "id": 1, "name": "1", "difficulty": "interview", "description": "Echo.",
        "starter_code": "", "sample_io": [], "test_list": [{"input": "1\n", "output": ["1\n"]}],
    }  # fmt: skip
    rows = [good, {**good, "id": 2, "test_list": [{"input": "1\n", "output": "1\n"}]}]
    (folder / "selected150.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(StdioDataError, match=r"selected150.jsonl:2: test_list\[0\].output"):
        load(tmp_path)
    rows[1] = {**good, "description": "Echo, again."}  # id 1 twice, different content
    (folder / "selected150.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (problem,) = load(tmp_path)["test"]
    assert problem.defects == ("id 1 appears on two lines with different content",)


ROW_CASES = {
    "all": [("public_1", "passed", ""), ("hidden_1", "passed", "")],
    "public-only": [
        ("public_1", "passed", ""),
        ("hidden_1", "failed", "AssertionError: wrong_answer: token 1: expected '2', got '3'"),
    ],
    "crashes": [
        ("public_1", "failed", "runtime_error: runtime error: killed by SIGSEGV"),
        ("hidden_1", "timeout", "time_limit: time limit exceeded (2 s)"),
    ],
    "no-compile": [
        ("public_1", "failed", "compile error: main.cpp:1: error"),
        ("hidden_1", "failed", "compile error: main.cpp:1: error"),
    ],
    "wrong-value": [  # a call-based problem's returned value
        ("public_1", "failed", "assert 10 == 1"),
        ("hidden_1", "failed", "candidate raised ValueError: x"),
    ],
}
EXPECTED = {  # preset: {row: reward}
    "stdio_fraction": {
        "all": 1.0,
        "public-only": 0.5,
        "crashes": 0.0,
        "no-compile": 0.0,
        "wrong-value": 0.0,
    },
    "stdio_all_pass": {
        "all": 1.0,
        "public-only": 0.0,
        "crashes": 0.0,
        "no-compile": 0.0,
        "wrong-value": 0.0,
    },
    "stdio_levels": {
        "all": 1.0,
        "public-only": 0.75,
        "crashes": 0.25,
        "no-compile": 0.0,
        "wrong-value": 0.5,
    },
}


@pytest.mark.parametrize("preset", sorted(EXPECTED))
def test_stdio_reward_presets(preset: str) -> None:
    from harness.stdio.problem import StdioTest, stdio_problem

    problem = stdio_problem(
        "t", "t/1", "x", [StdioTest("1\n", "2\n"), StdioTest("1\n", "2\n", True)]
    )
    config = load_reward_config(preset)
    for name, cases in ROW_CASES.items():
        row = {
            "task_id": "t/1",
            "status": "passed" if name == "all" else "failed",
            "passed": name == "all",
            "program": "print(2)",
            "cases": [{"case_id": c, "status": s, "message": m} for c, s, m in cases],
        }
        fields = reward_fields(row, problem, {}, config)
        assert fields["reward"] == EXPECTED[preset][name], (preset, name, fields)
        assert fields["reward_range"] == [0.0, 1.0]


@pytest.mark.slow
def test_a_pytest_session_judges_apps_mini_samples(pytester: pytest.Pytester, splits: dict) -> None:
    """Three stdio problems of apps-mini through the plugin with two workers: a wrong program
    and an empty one fail with per-test outcomes in results.jsonl."""
    problems = [p for p in splits["test"] if is_stdio(p) and not p.defects][:3]
    rows = []
    for problem in problems:
        rows.append({"task_id": problem.task_id, "sample_id": "zero", "completion": "print(0)"})
        rows.append(
            {"task_id": problem.task_id, "sample_id": "empty", "completion": "```python\n```"}
        )
    samples = pytester.path / "samples.jsonl"
    samples.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ids = ",".join(p.task_id.split("/")[1] for p in problems)
    result = pytester.runpytest_subprocess(
        "--llm-eval", "apps-mini", "--llm-samples", str(samples), "--llm-out", "out",
        "-n", "2", "-p", "no:cacheprovider", "-p", "no:benchmark",
        "-k", " or ".join(ids.split(",")),
    )  # fmt: skip
    result.assert_outcomes(failed=6)
    results = [json.loads(line) for line in (pytester.path / "out/results.jsonl").open()]
    assert len(results) == 6 and not any(r["passed"] for r in results)
    zero = next(r for r in results if r["sample_id"] == "zero")
    assert zero["cases"][0]["message"].startswith("AssertionError: wrong_answer")
    assert any("not run" in c["message"] for c in zero["cases"][1:])
