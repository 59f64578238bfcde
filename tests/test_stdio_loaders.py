"""The stdio suites' loaders (livecodebench, codecontests, apps, taco, jsonl: stdio lines) on
fixture rows written in each data set's published schema (tests/fixtures/stdio)."""

from __future__ import annotations

import base64
import gzip
import json
import pickle
import shutil
import zlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.stdio.problem import is_stdio, stdio_spec
from suites import SuiteError, load_splits, load_suite
from suites.apps import unwrap_call_outputs
from suites.jsonl_suite import JsonlSuiteError
from suites.livecodebench import parse_window
from suites.stdio_build import checker_for
from suites.stdio_data import IoTest, StdioDataError
from suites.stdio_encodings import (
    decode_compressed_json,
    encode_compressed_json,
    parse_input_output,
)
from suites.taco import _MEGABYTES, _SECONDS, read_limit

FIXTURES = Path(__file__).parent / "fixtures" / "stdio"
MIRRORS = {"livecodebench": "livecodebench", "apps": "apps", "taco": "taco"}
MIRRORS["codecontests"] = "code_contests"


def splits(name: str, data_dir: Path = FIXTURES) -> dict[str, list[Any]]:
    return load_splits(name, data_dir)


def by_id(problems: list[Any]) -> dict[str, Any]:
    return {p.task_id: p for p in problems}


# -- each loader on its fixture ------------------------------------------------------------


def test_livecodebench_releases_tests_and_call_based_methods() -> None:
    got = splits("livecodebench")
    assert [p.task_id for p in got["release_v1"]] == ["abc900_a", "9001", "1900A"]
    assert [p.task_id for p in got["v2"]] == ["abc950_b", "9500"]
    assert [p.task_id for p in got["release_v2"]] == [p.task_id for p in got["test"]]
    problems = by_id(got["test"])
    stdin = stdio_spec(problems["abc900_a"])
    # one public test, four private ones from the compressed field, in the data's order
    assert [(t.input, t.output, t.hidden) for t in stdin.tests[:2]] == [
        ("1 2\n", "3\n", False),
        ("5 7\n", "12\n", True),
    ]
    assert len(stdin.tests) == 5 and stdin.checker.kind == "tokens"
    assert problems["abc900_a"].metadata["test_groups"] == {"public": 1, "private": 4}
    assert problems["abc900_a"].metadata["platform"] == "atcoder"
    assert problems["abc900_a"].metadata["contest_date"] == "2023-05-20"
    # the statement's "absolute or relative error ... 10^{-6}" picks the float checker
    assert stdio_spec(problems["1900A"]).checker.kind == "float"
    # LeetCode: metadata.func_name names a method of class Solution, called on an instance
    method = problems["9001"]
    assert not is_stdio(method) and method.entry_point == "Solution"
    assert [c.calls for c in method.cases][0] == ("Solution().addK(*([1, 2, 3], 2))",)
    assert method.cases[0].check.endswith("== [3, 4, 5]")
    assert "from typing import *" in method.program_setup
    assert method.metadata["starter_code"].startswith("class Solution:")


def test_livecodebench_date_window_and_language() -> None:
    late = splits("livecodebench@2024-08-01..")
    assert [p.task_id for p in late["test"]] == ["abc950_b", "9500"]
    assert late["release_v1"] == [] and all(
        p.suite == "livecodebench@2024-08-01.." for p in late["test"]
    )
    window = splits("livecodebench@2023-06-01..2023-09-10")["test"]
    assert [p.task_id for p in window] == ["9001", "1900A"]  # both ends included
    cpp = by_id(splits("livecodebench@cpp@..2023-12-31")["test"])
    assert cpp["abc900_a"].metadata["language"] == "stdio-cpp"
    assert any("Python only" in d for d in cpp["9001"].defects)  # reported, never dropped


@pytest.mark.parametrize(
    "window", ["2024-13-01..", "..", "2024-08-01", "2025-01-01..2024-01-01", "yesterday..today"]
)
def test_livecodebench_bad_window_is_a_clear_error(window: str) -> None:
    with pytest.raises(SuiteError, match="livecodebench: date window"):
        parse_window(window)


def test_apps_stdio_lines_call_based_and_defects() -> None:
    got = splits("apps")
    assert [p.task_id for p in got["test_introductory"]] == ["apps/test/4000", "apps/test/4001"]
    assert [p.task_id for p in got["train"]] == ["apps/train/4000"]  # raw files name it "id"
    problems = by_id(got["test"])
    assert stdio_spec(problems["apps/test/4000"]).tests[2].output == "16\n"
    assert problems["apps/test/4000"].reference.startswith("n = int(input())")
    # outputs given as lists of lines are joined as APPS joins them
    assert stdio_spec(problems["apps/test/3000"]).tests[0].input == "a\nb\nc\n"
    call = problems["apps/test/4001"]
    assert call.entry_point == "double_all" and call.cases[0].calls == ("double_all(*([1, 2],))",)
    assert call.cases[0].check.endswith("== [2, 4]")  # [[2, 4]] unwrapped
    assert problems["apps/test/100"].defects[0].startswith("input_output: empty")


def test_taco_limits_and_class_methods() -> None:
    problems = by_id(splits("taco")["test"])
    first = stdio_spec(problems["taco/test/0"])
    assert (first.time_limit_s, first.memory_mb) == (1.0, 256)
    odd = problems["taco/test/2"]
    assert stdio_spec(odd).memory_mb == 1536 and odd.metadata["unread_time_limit"] == "a while"
    method = problems["taco/test/1"]
    assert method.cases[0].calls == ("Solution().isPalin(*('aba',))",)
    assert [p.task_id for p in splits("taco")["test_medium_hard"]] == ["taco/test/1"]


def test_codecontests_groups_limits_and_references() -> None:
    problems = by_id(splits("codecontests")["test"])
    ones = problems["9990_A. Count the Ones"]
    spec = stdio_spec(ones)
    assert ones.metadata["test_groups"] == {"public": 1, "private": 2, "generated": 3}
    assert [t.hidden for t in spec.tests] == [False] + [True] * 5
    assert (spec.time_limit_s, spec.memory_mb) == (1.5, 256)
    assert ones.reference == "print(input().count('1'))\n"  # the Python 3 solution
    assert ones.metadata["difficulty"] == "A" and ones.metadata["source_site"] == "CODEFORCES"
    half = stdio_spec(problems["9991_B. Half"])
    assert half.checker.kind == "float" and half.checker.abs_tol == pytest.approx(1e-9)
    assert len(problems["9992_C. File Copy"].defects) == 2  # reads a named file: a data error
    cpp = by_id(splits("codecontests@cpp")["test"])["9990_A. Count the Ones"]
    assert cpp.metadata["language"] == "stdio-cpp" and "#include" in cpp.reference


def test_jsonl_suite_takes_stdio_lines_beside_humaneval_ones() -> None:
    problems = by_id(load_suite(f"jsonl:{FIXTURES / 'own_problems.jsonl'}"))
    assert stdio_spec(problems["own/sum"]).time_limit_s == 1.0
    assert stdio_spec(problems["own/sum"]).memory_mb == 128
    assert [t.hidden for t in stdio_spec(problems["own/sum"]).tests] == [False, True, True]
    assert stdio_spec(problems["own/derangement"]).checker.kind == "special"
    assert stdio_spec(problems["own/yes"]).checker.case_insensitive
    assert problems["own/maxpair"].cases[1].calls == ("max_pair(*(-1, -7))",)
    assert problems["own/humaneval_shape"].entry_point == "inc"  # HumanEval lines still work


# -- bad data: the error names the file, the line and the field ---------------------------


def mirror_with(tmp_path: Path, suite: str, file: str, mutate: Any) -> Path:
    """A copy of the suite's fixture mirror whose second row of ``file`` is mutated."""
    folder = tmp_path / MIRRORS[suite]
    folder.mkdir()
    for path in (FIXTURES / MIRRORS[suite]).iterdir():
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        if path.name == file:
            mutate(rows[1])
        path_out = folder / path.name
        path_out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp_path


def setter(**values: Any) -> Any:
    return lambda row: row.update(values)


BAD_ROWS = [
    ("livecodebench", "test.jsonl", setter(platform="topcoder"), "platform"),
    ("livecodebench", "test.jsonl", setter(private_test_cases="eJy!!"), "private_test_cases"),
    ("livecodebench", "test.jsonl", setter(contest_date="last week"), "contest_date"),
    ("livecodebench", "test.jsonl", setter(metadata='{"func_name": "1x"}'), "metadata.func_name"),
    ("livecodebench", "test.jsonl", setter(public_test_cases="[{}]"), "public_test_cases[0]"),
    ("livecodebench", "test2.jsonl", setter(question_id="abc900_a"), "task_id"),
    ("apps", "test.jsonl", setter(input_output="{'inputs': []}"), "input_output"),
    ("apps", "test.jsonl", setter(difficulty="hard"), "difficulty"),
    ("apps", "test.jsonl", setter(problem_id="4001"), "problem_id"),
    ("apps", "test.jsonl", setter(problem_id=4000), "task_id"),
    ("taco", "test.jsonl", setter(difficulty="easy"), "difficulty"),
    ("taco", "test.jsonl", setter(solutions="not json"), "solutions"),
    ("codecontests", "test.jsonl", setter(source=99), "source"),
    ("codecontests", "test.jsonl", setter(time_limit={"seconds": "2"}), "time_limit"),
    (
        "codecontests",
        "test.jsonl",
        setter(private_tests={"input": ["1\n"], "output": []}),
        "private_tests",
    ),
]


@pytest.mark.parametrize(("suite", "file", "mutate", "field"), BAD_ROWS)
def test_a_bad_row_names_file_line_and_field(
    tmp_path: Path, suite: str, file: str, mutate: Any, field: str
) -> None:
    data_dir = mirror_with(tmp_path, suite, file, mutate)
    with pytest.raises(StdioDataError) as caught:
        splits(suite, data_dir)
    message = str(caught.value)
    assert f"{file}:2: {field}" in message
    if field == "task_id":
        assert message.endswith(".jsonl:1")  # and where the id first appeared


def test_a_missing_mirror_file_says_what_was_looked_for(tmp_path: Path) -> None:
    mirror = tmp_path / "livecodebench"
    mirror.mkdir()
    with pytest.raises(SuiteError, match="holds no test.jsonl"):
        splits("livecodebench", tmp_path)
    (mirror / "test.jsonl").write_bytes((FIXTURES / "livecodebench" / "test.jsonl").read_bytes())
    (mirror / "test3.jsonl").write_bytes((FIXTURES / "livecodebench" / "test2.jsonl").read_bytes())
    with pytest.raises(SuiteError, match="has test3.jsonl but no test2.jsonl"):
        splits("livecodebench", tmp_path)
    (mirror / "test3.jsonl").unlink()
    with gzip.open(mirror / "test2.jsonl.gz", "wb") as fh:  # compressed mirrors read too
        fh.write((FIXTURES / "livecodebench" / "test2.jsonl").read_bytes())
    assert len(splits("livecodebench", tmp_path)["release_v2"]) == 5


BAD_JSONL = [
    ({"tests": "1 2"}, "tests"),
    ({"tests": [{"input": 1, "output": "1"}]}, r"tests\[0\].input"),
    ({"tests": [{"input": "1", "output": "1", "hidden": "no"}]}, r"tests\[0\].hidden"),
    ({"checker": {"kind": "fuzzy"}}, "checker.kind"),
    ({"checker": {"kind": "special"}}, "checker.judge"),
    ({"checker": {"kind": "float", "abs_tol": -1}}, "checker.abs_tol"),
    ({"checker": {"tolerance": 1}}, "checker"),
    ({"language": "cobol"}, "language"),
    ({"time_limit_s": 0}, "time_limit_s"),
    ({"fn_name": "f", "tests": [{"input": "1"}]}, r"tests\[0\]"),
    ({"prompt": ""}, "prompt"),
]


@pytest.mark.parametrize(("change", "field"), BAD_JSONL)
def test_a_bad_jsonl_stdio_line_names_file_line_and_field(
    tmp_path: Path, change: dict[str, Any], field: str
) -> None:
    good = {"task_id": "t/1", "prompt": "Echo.", "tests": [{"input": "a\n", "output": "a\n"}]}
    path = tmp_path / "mine.jsonl"
    path.write_text(json.dumps({**good, "task_id": "t/0"}) + "\n" + json.dumps({**good, **change}))
    with pytest.raises(JsonlSuiteError, match=rf"mine.jsonl:2: {field}:"):
        load_suite(f"jsonl:{path}")


def test_suite_options_are_checked(tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match="takes no @OPTION"):
        load_splits("humaneval@cpp")
    with pytest.raises(SuiteError, match="unknown option 'fortran'"):
        splits("apps@fortran")
    with pytest.raises(SuiteError, match="more than one date window"):
        splits("livecodebench@2024-01-01..@2025-01-01..")
    assert [p.task_id for p in splits("lcb@..2023-05-31")["test"]] == ["abc900_a"]


def test_training_options_run_every_test_or_the_largest_inputs() -> None:
    evaluated = stdio_spec(by_id(splits("codecontests")["test"])["9990_A. Count the Ones"])
    assert evaluated.stop_at_first_failure and len(evaluated.tests) == 6
    every = stdio_spec(by_id(splits("codecontests@partial")["test"])["9990_A. Count the Ones"])
    assert not every.stop_at_first_failure and len(every.tests) == 6
    largest = by_id(splits("codecontests@largest2@cpp")["test"])["9990_A. Count the Ones"]
    assert [t.input for t in stdio_spec(largest).tests] == ["0110\n", "111111\n"]
    assert [c.case_id for c in largest.cases] == ["public_1", "hidden_3"]
    assert largest.metadata["language"] == "stdio-cpp"
    with pytest.raises(SuiteError, match="keeps no test"):
        splits("apps@largest0")


# -- the encodings, over many inputs --------------------------------------------------------

TEXT = st.text(st.characters(codec="utf-8"), max_size=40)
LCB_TESTS = st.lists(
    st.fixed_dictionaries(
        {"input": TEXT, "output": TEXT, "testtype": st.sampled_from(["stdin", "functional"])}
    ),
    max_size=5,
)


@settings(max_examples=60, deadline=None)
@given(LCB_TESTS)
def test_compressed_tests_round_trip(tests: list[dict[str, str]]) -> None:
    assert decode_compressed_json(encode_compressed_json(tests)) == tests


class Hostile:
    def __reduce__(self) -> tuple[Any, ...]:
        return (print, ("pwned",))  # what a hostile pickle would call


@pytest.mark.parametrize(
    ("text", "layer"),
    [
        ("not base64 at all!", "not base64"),
        (base64.b64encode(b"plain bytes").decode(), "not zlib"),
        (base64.b64encode(zlib.compress(pickle.dumps(Hostile()))).decode(), "not a pickled string"),
        (base64.b64encode(zlib.compress(pickle.dumps([1, 2]))).decode(), "holds a list"),
        (base64.b64encode(zlib.compress(pickle.dumps("{nope"))).decode(), "not JSON"),
        (base64.b64encode(zlib.compress(b"\0" * (3 << 20))).decode(), "inflates past 2 MiB"),
    ],
)
def test_compressed_tests_refuse_what_is_not_a_json_string(
    text: str, layer: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("suites.stdio_encodings.MAX_DECOMPRESSED", 2 << 20)
    with pytest.raises(ValueError, match=layer):
        decode_compressed_json(text)
    assert "pwned" not in capsys.readouterr().out  # nothing in the pickle was called


LINES = st.lists(
    st.text(st.characters(codec="ascii", exclude_characters="\n\r"), max_size=8), max_size=6
)


@settings(max_examples=60, deadline=None)
@given(LINES, st.text(max_size=30))
def test_apps_input_output_keeps_text_exactly(lines: list[str], text: str) -> None:
    """Text tests are kept byte for byte (the checker decides about whitespace); lists of
    lines are joined with newlines and end with one."""
    tests, fn_name, defects = parse_input_output(
        {"inputs": [lines, text], "outputs": [text, lines]}, "f:1"
    )
    assert fn_name is None and defects == []
    joined = "\n".join(lines) + ("\n" if lines else "")
    assert [(t.input, t.output) for t in tests] == [(joined, text), (text, joined)]


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3),
    max_leaves=6,
)


@settings(max_examples=60, deadline=None)
@given(st.lists(JSON_VALUES, max_size=3), JSON_VALUES)
def test_apps_call_tests_carry_the_arguments_and_unwrapped_result(
    args: list[Any], result: Any
) -> None:
    tests, fn_name, _ = parse_input_output(
        {"fn_name": "f", "inputs": [args], "outputs": [[result]]}, "f:1"
    )
    assert fn_name == "f"
    [test] = unwrap_call_outputs(tests)
    assert [json.loads(line) for line in test.input.split("\n") if line] == args
    assert json.loads(test.output) == result


def test_apps_input_output_defects_are_reported_not_dropped() -> None:
    tests, _, defects = parse_input_output(
        {"inputs": ["1\n", 5], "outputs": ["1\n", "5\n", "x"]}, "f:1"
    )
    assert [t.input for t in tests] == ["1\n"]
    assert any("2 inputs but 3 outputs" in d for d in defects)
    assert any("inputs[1]" in d for d in defects)
    with pytest.raises(StdioDataError, match=r"f:1: input_output.fn_name"):
        parse_input_output({"inputs": [], "outputs": [], "fn_name": "no name"}, "f:1")


@pytest.mark.parametrize(
    ("text", "units", "value"),
    [
        ("1 seconds", _SECONDS, 1.0),
        ("2.5 seconds", _SECONDS, 2.5),
        ("500 ms", _SECONDS, 0.5),
        ("256 megabytes", _MEGABYTES, 256.0),
        ("64 MB", _MEGABYTES, 64.0),
        ("1 gigabytes", _MEGABYTES, 1024.0),
        ("a while", _SECONDS, None),
        (None, _SECONDS, None),
        ("0 seconds", _SECONDS, None),
    ],
)
def test_taco_limits_read(text: Any, units: dict[str, float], value: float | None) -> None:
    assert read_limit(text, units) == value


@pytest.mark.parametrize(
    ("statement", "tolerance"),
    [
        (
            "Your answer is considered correct if its absolute or relative error does not exceed 10^{-6}.",
            1e-6,
        ),
        ("The absolute error must not exceed 10^-4.", 1e-4),
        ("The relative error of your answer must be at most 10^{-9}.", 1e-9),
        ("Print the answer modulo 10^9+7.", None),
        ("Print two integers.", None),
    ],
)
def test_a_stated_tolerance_picks_the_float_checker(
    statement: str, tolerance: float | None
) -> None:
    checker = checker_for(statement)
    if tolerance is None:
        assert checker.kind == "tokens"
    else:
        assert checker.kind == "float" and checker.abs_tol == pytest.approx(tolerance)


def test_functional_and_stdin_tests_cannot_mix_silently(tmp_path: Path) -> None:
    def stdin_test_in_a_call_problem(row: dict[str, Any]) -> None:
        tests = json.loads(row["public_test_cases"])
        tests[0]["testtype"] = "stdin"
        row["public_test_cases"] = json.dumps(tests)

    data_dir = mirror_with(tmp_path, "livecodebench", "test.jsonl", stdin_test_in_a_call_problem)
    problem = by_id(splits("livecodebench", data_dir)["test"])["9001"]
    assert any("testtype is not 'functional'" in d for d in problem.defects)


def test_io_test_groups_order_public_first() -> None:
    from suites.stdio_build import to_problem
    from suites.stdio_data import StdioRecord

    record = StdioRecord(
        "s",
        "t",
        "Echo.",
        (IoTest("2\n", "2\n", "private"), IoTest("1\n", "1\n", "public")),
    )
    spec = stdio_spec(to_problem(record))
    assert [(t.input, t.hidden) for t in spec.tests] == [("1\n", False), ("2\n", True)]


# -- end to end: the fixture suites judged in real pytest sessions ----------------------------

HONEST_SUM = "a, b = map(int, input().split())\nprint(a + b)\n"
LCB_SAMPLES = [
    ("abc900_a", "honest", HONEST_SUM),
    ("abc900_a", "spaced", "a, b = map(int, input().split())\nprint(' ', a + b, ' ')\nprint()\n"),
    ("abc900_a", "wrong", "a, b = map(int, input().split())\nprint(a - b)\n"),
    ("abc900_a", "exits_early", "import sys\nsys.exit(0)\n"),
    ("abc900_a", "every_answer", "for i in range(3000):\n    print(i)\n"),
    ("9001", "honest", "class Solution:\n    def addK(self, nums: List[int], k: int) -> List[int]:\n"
     "        return [x + k for x in nums]\n"),
    ("9001", "wrong", "class Solution:\n    def addK(self, nums, k):\n        return nums\n"),
    ("1900A", "honest", "n = int(input())\nprint(sum(map(int, input().split())) / n)\n"),
    ("1900A", "rounded", "n = int(input())\nprint(round(sum(map(int, input().split())) / n, 2))\n"),
    ("abc950_b", "honest", "print(input()[::-1])\n"),
    ("abc950_b", "loops", "while True:\n    pass\n"),
    ("abc950_b", "crashes", "print(1 // 0)\n"),
    ("9500", "honest", "class Solution:\n    def countEvens(self, nums: List[int]) -> int:\n"
     "        return sum(x % 2 == 0 for x in nums)\n"),
]  # fmt: skip


def write_samples(path: Path, samples: list[tuple[str, str, str]]) -> Path:
    rows = [{"task_id": t, "sample_id": s, "completion": c} for t, s, c in samples]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def judged(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, suite: str, samples: str
) -> dict[tuple[str, str], dict[str, Any]]:
    monkeypatch.setenv("CODEEVAL_DATA_DIR", str(FIXTURES))
    out = pytester.path / "out"
    pytester.runpytest(
        "--llm-eval", suite, "--llm-samples", samples, "--llm-out", str(out),
        "-p", "no:codeeval_gate", "-p", "no:cacheprovider",
    )  # fmt: skip
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    return {(r["task_id"], r["sample_id"]): r for r in rows}


@pytest.mark.slow
def test_livecodebench_fixture_end_to_end(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    samples = write_samples(pytester.path / "samples.jsonl", LCB_SAMPLES)
    rows = judged(pytester, monkeypatch, "livecodebench", str(samples))
    status = {key: row["status"] for key, row in rows.items()}
    for task in ("abc900_a", "9001", "1900A", "abc950_b", "9500"):
        assert status[task, "honest"] == "passed", rows[task, "honest"]
    assert status["abc900_a", "spaced"] == "passed"  # judges compare tokens
    for sample in ("wrong", "exits_early", "every_answer"):
        assert status["abc900_a", sample] == "failed"
    assert status["9001", "wrong"] == "failed" and status["1900A", "rounded"] == "failed"
    assert status["abc950_b", "loops"] == "timeout"
    assert status["abc950_b", "crashes"] == "failed"
    assert "ZeroDivisionError" in rows["abc950_b", "crashes"]["cases"][0]["message"]


@pytest.mark.slow
def test_other_fixture_suites_end_to_end(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """References pass, wrong programs and a data defect get their verdicts, a special judge
    accepts any valid answer and rejects others."""
    for suite in ("apps", "taco", "codecontests"):
        rows = judged(pytester, monkeypatch, suite, "canonical")
        assert rows and all(r["status"] == "passed" for r in rows.values()), (suite, rows)
    wrong = write_samples(
        pytester.path / "wrong.jsonl",
        [
            ("apps/test/4001", "honest", "def double_all(xs):\n    return [x * 2 for x in xs]\n"),
            ("apps/test/4001", "wrong", "def double_all(xs):\n    return xs\n"),
            ("apps/test/3000", "wrong", "print(input())\n"),
            ("apps/test/100", "any", "print(1)\n"),
        ],
    )
    rows = judged(pytester, monkeypatch, "apps", str(wrong))
    assert rows["apps/test/4001", "honest"]["status"] == "passed"
    assert rows["apps/test/4001", "wrong"]["status"] == "failed"
    assert rows["apps/test/3000", "wrong"]["status"] == "failed"
    assert rows["apps/test/100", "any"]["status"] == "error"  # a data error, not the model's
    own = write_samples(
        pytester.path / "own.jsonl",
        [
            ("own/derangement", "other_valid", "n = int(input())\nprint(*range(2, n + 1), 1)\n"),
            ("own/derangement", "fixed_point", "n = int(input())\nprint(*range(1, n + 1))\n"),
            ("own/yes", "lower", "s = input()\nprint('yes' if s == s[::-1] else 'no')\n"),
            ("own/third", "close", "print(int(input()) / 3 + 1e-9)\n"),
            ("own/sum", "honest", HONEST_SUM),
        ],
    )
    rows = judged(pytester, monkeypatch, f"jsonl:{FIXTURES / 'own_problems.jsonl'}", str(own))
    status = {key: row["status"] for key, row in rows.items()}
    assert status["own/derangement", "other_valid"] == "passed"
    assert status["own/derangement", "fixed_point"] == "failed"
    assert status["own/yes", "lower"] == "passed" and status["own/third", "close"] == "passed"
    assert status["own/sum", "honest"] == "passed"


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed (CI installs it)")
def test_codecontests_cpp_reference_end_to_end(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = judged(pytester, monkeypatch, "codecontests@cpp", "canonical")
    [row] = rows.values()  # the one problem with a C++ solution
    assert row["status"] == "passed" and row["suite"] == "codecontests@cpp"
