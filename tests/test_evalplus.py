"""EvalPlus's HumanEval+ and MBPP+ (suites.evalplus): the loaders, MBPP+'s input rebuilding,
the literal inputs, EvalPlus's oracle (harness.oracles.evalplus) and a real run.

The agreement with ``evalplus`` itself is tests/test_evalplus_agreement.py (slow tier)."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.oracles import decoded, encoded, judge
from harness.oracles.evalplus import digit_distance, poly, pyramid_surface
from harness.records import Problem
from suites.errors import SuiteError
from suites.evalplus import load_dataset, problem_from_record, read_records
from suites.evalplus_expected import _expected_texts, _filled, oracle_kind
from suites.evalplus_inputs import mbpp_inputs, python_literal
from suites.registry import load_suite


def oracle(out: object, want: object, atol: float = 0.0, kind: str = "exact", args=None):
    payload = {"kind": kind, "atol": atol, "out": encoded(want)}
    if args is not None:
        payload["args"] = encoded(args)
    return judge("evalplus", [out], json.dumps(payload))


# -- loaders ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("suite", "count", "version"),
    [
        ("humaneval-plus", 164, "HumanEval+ v0.1.10"),
        ("humaneval-plus-mini", 164, "HumanEval+ Mini v0.1.10"),
        ("mbpp-plus", 378, "MBPP+ v0.2.0"),
    ],
)
def test_the_suites_are_evalplus_data(shared_data: Path, suite: str, count: int, version: str):
    problems = load_suite(suite, data_dir=shared_data)
    records = dict(read_records(shared_data / "evalplus" / _file(suite))[0])
    assert len(problems) == count
    first = problems[0]
    record = records[1]
    assert first.prompt == record["prompt"] and first.task_id == record["task_id"]
    assert first.metadata["data_version"] == version
    base = [c for c in first.cases if c.case_id.startswith("base_")]
    plus = [c for c in first.cases if c.case_id.startswith("plus_")]
    assert (len(base), len(plus)) == (len(record["base_input"]), len(record["plus_input"]))
    assert all(c.oracle == "evalplus" and c.mode == "compare" for c in first.cases)


def _file(suite: str) -> str:
    from suites.evalplus import DATASETS

    return DATASETS[suite][0]


def test_aliases_point_at_the_evalplus_suites(shared_data: Path) -> None:
    assert load_suite("humaneval+", data_dir=shared_data)[0].suite == "humaneval-plus"
    assert load_suite("mbpp+", data_dir=shared_data)[0].suite == "mbpp-plus"


def test_a_bad_record_names_the_file_line_and_field(tmp_path: Path) -> None:
    good = {"task_id": "X/0", "prompt": "def f(x):\n", "entry_point": "f"}
    good |= {"canonical_solution": "    return x\n", "base_input": [[1]], "plus_input": []}
    path = tmp_path / "evalplus" / "HumanEvalPlus-v0.1.10.jsonl.gz"
    path.parent.mkdir()
    bad = {**good, "base_input": "1, 2"}
    path.write_bytes(gzip.compress((json.dumps(good) + "\n" + json.dumps(bad) + "\n").encode()))
    with pytest.raises(SuiteError, match=r"HumanEvalPlus-v0.1.10.jsonl.gz:2: field 'base_input'"):
        load_dataset("humaneval-plus", tmp_path)
    with pytest.raises(SuiteError, match="f:1: field 'entry_point' must be a string"):
        problem_from_record("humaneval-plus", good | {"entry_point": 3}, "", "f:1")
    missing = {k: v for k, v in good.items() if k != "canonical_solution"}
    with pytest.raises(SuiteError, match="f:2: field 'canonical_solution' is missing"):
        problem_from_record("humaneval-plus", missing, "", "f:2")


# -- inputs -----------------------------------------------------------------------------------
def test_mbpp_inputs_are_rebuilt_as_evalplus_rebuilds_them() -> None:
    assert mbpp_inputs("Mbpp/124", [["0", "1j"]]) == [(0.0, 1j)]
    assert mbpp_inputs("Mbpp/2", [[[3, 4], [5]]]) == [[(3, 4), (5,)]]
    assert mbpp_inputs("Mbpp/115", [[[[1, 2], [], 3]]]) == [[[{1, 2}, {}, {}]]]
    assert mbpp_inputs("Mbpp/580", [[[1, [2, 3]], 4]]) == [((1, (2, 3)), 4)]
    assert mbpp_inputs("Mbpp/3", [[[1, 2]]]) == [[[1, 2]]]  # not listed: as JSON gives it


plain = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5)
    | st.complex_numbers(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=3)
    | st.lists(inner, max_size=3).map(tuple)
    | st.frozensets(st.integers() | st.text(max_size=3), max_size=3).map(set)
    | st.dictionaries(st.text(max_size=3) | st.integers(), inner, max_size=3),
    max_leaves=12,
)  # fmt: skip


def _same(a: object, b: object) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b


@settings(max_examples=200, deadline=None)
@given(plain)
def test_literals_give_back_the_same_value_without_names(value: object) -> None:
    text = python_literal(value)
    assert _same(eval(text, {"__builtins__": {}}), value)  # noqa: S307 - our own literal


@settings(max_examples=200, deadline=None)
@given(plain)
def test_expected_values_round_trip(value: object) -> None:
    assert _same(decoded(json.loads(json.dumps(encoded(value)))), value)


# -- the oracle -------------------------------------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(st.floats(-1e6, 1e6), st.floats(-0.9, 0.9))
def test_float_outputs_get_a_1e6_tolerance(x: float, share: float) -> None:
    assert oracle(x + share * 1e-6, x) is None  # inside atol (+ rtol): passes
    assert oracle(x + 1e-6 + abs(x) * 2e-7 + 1e-9, x) is not None  # outside: fails
    assert oracle([x + share * 1e-6], [x]) is None


def test_exact_match_is_strict_about_types() -> None:
    assert oracle((1, 2), (1, 2)) is None
    assert "expected [1, 2], got (1, 2)" in oracle((1, 2), [1, 2])
    assert oracle(1, 1.0) is None  # == holds
    assert oracle(True, 1) is None  # == holds, as in evalplus
    assert oracle(None, 0) is not None


def test_special_oracles() -> None:
    assert oracle([3, 1, 2], [1, 2, 3], kind="set") is None
    assert oracle([1, 2], [1, 2, 3], kind="set") is not None
    assert oracle([[1]], [[1]], kind="set") is not None  # set() of lists raises: fails
    assert oracle(object.__new__(type("M", (), {})), True, kind="not_none") is None
    assert oracle(None, True, kind="not_none") is not None
    assert oracle(False, False, kind="not_none") is None
    assert oracle("anything", True, kind="always") is None
    assert oracle(0, 12, kind="zero_ok") is None and oracle(1, 12, kind="zero_ok") is not None
    assert oracle(pyramid_surface(3, 4), 33, kind="surface", args=[3, 4]) is None
    assert oracle(digit_distance(123, 256), 99, kind="digits", args=[123, 256]) is None


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(-5, 5), min_size=2, max_size=6), st.floats(-3, 3))
def test_find_zero_is_judged_by_the_polynomial(xs: list[int], x: float) -> None:
    value = abs(poly(xs, x))
    verdict = judge(
        "evalplus", [x], json.dumps({"kind": "poly", "atol": 1e-4, "args": encoded([xs])})
    )
    assert (verdict is None) == (value <= 1e-4)
    assert judge(
        "evalplus", ["x"], json.dumps({"kind": "poly", "atol": 1e-4, "args": encoded([xs])})
    )


def test_oracle_kinds_follow_the_entry_point() -> None:
    assert oracle_kind("humaneval", "find_zero") == "poly"
    assert oracle_kind("mbpp", "similar_elements") == "set"
    assert oracle_kind("mbpp", "check_str") == "not_none"
    assert oracle_kind("mbpp", "sum_div") == "zero_ok"
    assert oracle_kind("humaneval", "similar_elements") == "exact"


def test_the_float_tolerance_sticks_for_the_rest_of_its_group() -> None:
    """evalplus sets atol to 1e-6 at the first float output and keeps it for the group."""
    record = {"task_id": "X/0", "prompt": "def f(x):\n", "entry_point": "f", "atol": 0}
    record |= {"canonical_solution": "    return x\n", "base_input": [[1], [0.5], [2]]}
    record |= {"plus_input": [[3], [0.25]]}
    problem: Problem = problem_from_record("humaneval-plus", record, "d", "f:1")
    outputs = {"base": [encoded(1), encoded(0.5), encoded(2)], "plus": [encoded(3), encoded(0.25)]}
    filled = _filled(problem, {"expected": _expected_texts(problem, outputs)})
    atols = {c.case_id: json.loads(c.expected)["atol"] for c in filled.cases}
    assert atols == {"base_0": 0, "base_1": 0, "base_2": 1e-6, "plus_0": 0, "plus_1": 0}
    # so a mixed list after a float output is compared within 1e-6, as in evalplus
    mixed = json.loads(filled.cases[2].expected) | {"out": encoded([1, 2.5])}
    assert judge("evalplus", [[1, 2.5000001]], json.dumps(mixed)) is None
    assert judge("evalplus", [[1, 2.5000001]], json.dumps(mixed | {"atol": 0})) is not None


# -- a real run -------------------------------------------------------------------------------
def test_a_run_gives_base_and_plus_verdicts_and_names_the_data(shared_data: Path, tmp_path: Path):
    from harness.evaluate import evaluate
    from harness.pipeline.results import summarize
    from harness.records import Sample

    problems = load_suite("humaneval-plus", "test[:3]", shared_data)  # 0, 1, 2
    truncate = problems[2]  # truncate_number: x % 1.0; HumanEval's checks miss x - int(x) < 0
    samples = [
        Sample(p.task_id, p.reference[len(p.prompt) :], f"ref-{p.task_id}") for p in problems
    ] + [Sample(truncate.task_id, "    return round(number % 1.0, 3)\n", "rounded")]
    rows = evaluate(problems, samples, out_dir=tmp_path / "out")
    by_id = {r["sample_id"]: r for r in rows}
    assert all(by_id[f"ref-{p.task_id}"]["passed"] for p in problems)
    rounded = by_id["rounded"]
    assert rounded["base_passed"] and not rounded["passed"]
    failed = [c for c in rounded["cases"] if c["status"] != "passed"]
    assert failed and all(c.get("plus") for c in failed)
    assert "not within atol=1e-06" in failed[0]["message"]
    entry = summarize(rows, [1], {})["suites"]["humaneval-plus"]
    assert entry["data_version"] == "HumanEval+ v0.1.10"
    assert entry["base"]["pass@1"] == 1.0 and entry["pass@1"] == pytest.approx(5 / 6)
    module = next((tmp_path / "out").rglob("test_HumanEval_0.py")).read_text()
    assert "def test_plus(sandbox, case_id):" in module and module.count("def test_") == 2


def test_the_expected_outputs_cost_is_not_the_checks_budget() -> None:
    """Parsing a large expected output is the harness's own cost: a check budget far below it
    still judges the case (Mbpp/630's outputs made the reference fail on a loaded machine)."""
    import time

    from harness.pipeline.verdicts import judge_sample
    from harness.records import CheckCase
    from harness.sandbox import CaseExecution, SampleExecution

    big = list(range(2_000_000)) + [time.time_ns()]  # a text no earlier test parsed
    expected = json.dumps({"kind": "exact", "atol": 0.0, "out": encoded(big)})
    start = time.process_time()
    json.loads(expected)
    parse_s = time.process_time() - start
    assert parse_s > 0.03
    # A budget of half the parsing alone: judging must not count it. Relative to the parse so
    # that a loaded machine, which slows both, does not turn the comparison into a time-out.
    budget_s = parse_s / 2
    case = CheckCase(
        "plus_0", "", "compare", calls=("candidate()",), oracle="evalplus", expected=expected
    )
    problem = Problem("s", "T/1", "", "f", (case,), "")
    execution = SampleExecution(cases={"plus_0": CaseExecution("plus_0", "ok", values=[big])})
    functions = [("plus_0", lambda sandbox: sandbox.judge("plus_0"))]
    (outcome,) = judge_sample(problem, functions, execution, budget_s=budget_s)
    assert outcome.status == "passed", outcome.message


def test_llm_plus_adds_generated_cases_to_an_evalplus_suite(
    shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--llm-plus N`` works on EvalPlus's suites too, whichever problem step runs first: the
    expected-output step fills only EvalPlus's own cases and leaves the generated
    ``plus_gen_N`` ones to their oracle (it read every case as ``base_N``/``plus_N`` and
    crashed when the plus step had run first), from empty caches."""
    from harness.evaluate import evaluate
    from harness.plus import expand_plus, request_plus
    from harness.records import Sample
    from harness.sandbox import SandboxSettings
    from harness.sandbox.shared import shared_sandbox
    from suites.evalplus_expected import with_expected

    monkeypatch.setenv("CODEEVAL_CACHE", str(tmp_path / "cache"))
    original = load_suite("humaneval-plus", "test[:1]", shared_data)
    sandbox = shared_sandbox(SandboxSettings())
    (problem,) = with_expected(expand_plus(request_plus(original, 4), sandbox), sandbox)
    generated = [c for c in problem.cases if c.case_id.startswith("plus_gen_")]
    assert len(generated) == 4 and len(problem.cases) == len(original[0].cases) + 4
    own = [c for c in problem.cases if c.oracle == "evalplus"]
    assert len(own) == len(original[0].cases)
    assert all(json.loads(c.expected)["kind"] == "exact" for c in own)  # filled
    assert all(c.check and not c.oracle for c in generated)  # left to their own check
    wrong = problem.prompt + "    return False\n"  # no two numbers are ever close
    samples = [
        Sample(problem.task_id, problem.reference, "ref"),
        Sample(problem.task_id, wrong, "w"),
    ]
    rows = {r["sample_id"]: r for r in evaluate([problem], samples, out_dir=tmp_path / "out")}
    assert rows["ref"]["passed"] and not rows["w"]["passed"]
    assert [c["case_id"] for c in rows["ref"]["cases"]][-4:] == [c.case_id for c in generated]


# -- outputs past the channel's bounds, and evalplus's memory --------------------------------
@pytest.mark.slow  # the six problems' largest inputs: 40 s
def test_problems_whose_outputs_are_past_the_bounds_are_judged(
    shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HumanEval/15 (strings of 6.9 M characters) and /83 (ints of 3.3 M bits) were data
    defects: their references' outputs were over the channel's bounds. They travel as digests
    by equality now, so each is judged as evalplus judges it: its reference passes, and a
    program off by one character, or by one, fails on those very inputs."""
    from harness.evaluate import evaluate
    from harness.records import Sample

    monkeypatch.setenv("CODEEVAL_CACHE", str(tmp_path / "cache"))
    wanted = {"HumanEval/15", "HumanEval/83"}
    problems = [
        p for p in load_suite("humaneval-plus", data_dir=shared_data) if p.task_id in wanted
    ]
    off = {
        "HumanEval/15": "def string_sequence(n):\n"
        "    return ' '.join(map(str, range(n + 1))) + ('' if n < 10**6 else ' ')\n",
        "HumanEval/83": "def starts_one_ends(n):\n"
        "    return 1 if n == 1 else 18 * 10 ** (n - 2) + (n >= 10**6)\n",
    }
    samples = [Sample(p.task_id, p.reference, "ref") for p in problems]
    samples += [Sample(task, program, "off") for task, program in off.items()]
    rows = evaluate(problems, samples, out_dir=tmp_path / "out", every_case=True)
    for row in rows:
        assert row["error_kind"] is None, row["cases"][:1]
        failed = [c for c in row["cases"] if c["status"] != "passed"]
        if row["sample_id"] == "ref":
            assert row["passed"], failed[:2]
        else:  # only the inputs of 10**6 and more, each a value sent as its digest
            assert row["base_passed"] and not row["passed"], row["task_id"]
            assert failed and all(c["case_id"].startswith("plus_") for c in failed)
            assert all("compared by digest" in c["message"] for c in failed), failed[0]


def test_evalplus_problems_run_with_evalplus_memory(shared_data: Path, tmp_path: Path) -> None:
    """evalplus lets a judged program use 4 GiB; Mbpp/255's reference (and any right answer)
    needs more than the run's default 1 GiB on one input, so EvalPlus's problems ask for 4 GiB
    and a run with less gets it for them (and only as a floor)."""
    from harness.pipeline.prepare import RunSettings, check_setup

    mbpp = load_suite("mbpp-plus", "test[:2]", shared_data)
    assert all(p.metadata["memory_mb"] == 4096 for p in mbpp)
    _, settings = check_setup(mbpp, tmp_path / "a", RunSettings(memory_mb=1024))
    assert settings.memory_mb == 4096
    _, settings = check_setup(mbpp, tmp_path / "b", RunSettings(memory_mb=8192))
    assert settings.memory_mb == 8192
    human = load_suite("humaneval", "test[:2]", shared_data)
    _, settings = check_setup(human, tmp_path / "c", RunSettings(memory_mb=1024))
    assert settings.memory_mb == 1024


@pytest.mark.slow
@pytest.mark.parametrize(("suite", "count"), [("humaneval-plus", 164), ("mbpp-plus", 378)])
def test_every_problem_is_judged_and_counted_in_pass_at_k(
    shared_data: Path, tmp_path: Path, suite: str, count: int
) -> None:
    """Every reference passes and every problem counts: pass@k is over EvalPlus's 164 and 378
    problems (five of HumanEval+'s and Mbpp/255 were data defects, left out of pass@k)."""
    from harness.evaluate import evaluate
    from harness.records import Sample

    problems = load_suite(suite, data_dir=shared_data)
    samples = [Sample(p.task_id, p.reference, "reference") for p in problems]
    rows = evaluate(problems, samples, workers=2, out_dir=tmp_path)
    assert [r["task_id"] for r in rows if not r["passed"]] == []
    entry = json.loads((tmp_path / "summary.json").read_text())["suites"][suite]
    assert (entry["problems"], entry["data_errors"], entry["errors"]) == (count, 0, 0)
    assert entry["pass@1"] == 1.0 and entry["base"]["pass@1"] == 1.0
