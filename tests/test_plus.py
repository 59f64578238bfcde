"""Plus cases (harness.plus): generated from references in the real sandbox, judged like any case.

The properties the issue asks for, each against the real sandbox and real pytest sessions:
references pass every plus case (on a sample of HumanEval and MBPP here; every problem in the
slow tier at the end), a seed gives the same cases, no expected value comes from a reference
run that raised or timed out, and the plus cases catch the realistic wrong programs of
``tests/fixtures/plus_wrong_programs.jsonl`` that pass the original checks.
"""

from __future__ import annotations

import ast
import json
import os
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.plus import expand_plus, request_plus
from harness.plus.cases import is_plus, literal
from harness.plus.contracts import contract
from harness.plus.domains import Hints, infer
from harness.plus.input_mutation import mutate_inputs
from harness.plus.strategies import draw
from harness.records import Problem
from harness.sandbox import SandboxSettings
from harness.sandbox.shared import shared_sandbox
from suites.humaneval import problem_from_record

FIXTURES = Path(__file__).parent / "fixtures"
WRONG_PROGRAMS = FIXTURES / "plus_wrong_programs.jsonl"


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def plus_cases(problem: Problem) -> list[Any]:
    return [c for c in problem.cases if is_plus(c.case_id)]


def call_args(case: Any) -> tuple[Any, ...]:
    """The literal arguments of a plus case's call ``candidate(...)``."""
    call = ast.parse(case.calls[0], mode="eval").body
    assert isinstance(call, ast.Call)
    return tuple(ast.literal_eval(a) for a in call.args)


# -- the pieces, property-tested (cheap: no sandbox) -------------------------------------------
SEED_VALUES = st.one_of(
    st.integers(-50, 50),
    st.text("abc xyz", max_size=6),
    st.lists(st.integers(-5, 20), max_size=5),
    st.lists(st.text("ab", max_size=3), max_size=4),
    st.tuples(st.integers(0, 9), st.booleans()),
    st.dictionaries(st.text("kv", max_size=2), st.integers(0, 9), max_size=3),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.nested_given])
@given(seeds=st.lists(st.tuples(SEED_VALUES), min_size=1, max_size=4), seed=st.integers(0, 99))
def test_mutation_and_hypothesis_stay_inside_the_inferred_domain(
    seeds: list[tuple[Any, ...]], seed: int
) -> None:
    kinds = {type(s[0]) for s in seeds}
    if len(kinds) > 1:
        seeds = [s for s in seeds if type(s[0]) is type(seeds[0][0])]
    domains = [infer([s[0] for s in seeds], None, Hints())]
    assert all(domains[0].contains(s[0]) for s in seeds)
    for args in mutate_inputs(seeds, domains, 20, random.Random(seed)):
        assert domains[0].contains(args[0])
    for args in draw(domains, 10, seed):
        assert domains[0].contains(args[0])


def test_draws_and_mutations_are_the_same_for_the_same_seed() -> None:
    domains = [infer([[1, 2, 3], [4, -5]]), infer(["ab", "ba c"])]
    seeds = [([1, 2, 3], "ab"), ([4, -5], "ba c")]
    assert draw(domains, 30, 7) == draw(domains, 30, 7)
    assert draw(domains, 30, 7) != draw(domains, 30, 8)
    first = mutate_inputs(seeds, domains, 30, random.Random("t|0"))
    assert first == mutate_inputs(seeds, domains, 30, random.Random("t|0"))


@settings(max_examples=60, deadline=None)
@given(value=st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.tuples(inner, inner)
    | st.dictionaries(st.text(max_size=2), inner, max_size=2),
    max_leaves=8,
))  # fmt: skip
def test_an_expected_value_is_a_literal_that_reads_back_equal(value: Any) -> None:
    text = literal(value)
    if text is not None:
        back = ast.literal_eval(text)
        assert back == value and type(back) is type(value)


def test_contracts_read_the_parameters_by_name() -> None:
    holds = contract("HumanEval/59", ("n",))  # "Assume n > 1 and is not a prime."
    assert holds((15,)) and not holds((13,)) and not holds((1,))
    assert contract("no/such/task", ("x",))((object(),))


# -- generation in the real sandbox ------------------------------------------------------------
TRAPS = {
    "task_id": "traps/0",
    "prompt": 'def total(xs: list) -> int:\n    """The sum of xs (non-negative numbers only)."""\n',
    "entry_point": "total",
    "canonical_solution": "    if any(x < 0 for x in xs):\n"
    "        raise ValueError('negative')\n"
    "    if sum(xs) % 23 == 5:\n"
    "        while True:\n"
    "            pass\n"
    "    return sum(xs)\n",
    "test": "def check(candidate):\n"
    "    assert candidate([1, 2]) == 3\n"
    "    assert candidate([4, 5, 6]) == 15\n"
    "    assert candidate([]) == 0\n",
}


@pytest.fixture
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh cache: generation really runs (and nothing of it leaks into the user's cache)."""
    monkeypatch.setenv("CODEEVAL_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.nested_given])
@given(seed=st.integers(0, 10_000))
def test_no_expected_value_from_a_reference_that_raised_or_timed_out(
    seed: int, tmp_path_factory: pytest.TempPathFactory
) -> None:
    os.environ["CODEEVAL_CACHE"] = str(tmp_path_factory.mktemp("cache"))
    try:
        problem = problem_from_record(TRAPS, "traps")
        (expanded,) = expand_plus(
            request_plus([problem], 16, seed=seed), shared_sandbox(SandboxSettings())
        )
    finally:
        del os.environ["CODEEVAL_CACHE"]
    stats = expanded.metadata["plus"]
    cases = plus_cases(expanded)
    assert cases, stats
    assert stats["valid"] < stats["pool"]  # some inputs raised or timed out, and were dropped
    for case in cases:
        (xs,) = call_args(case)
        assert all(x >= 0 for x in xs) and sum(xs) % 23 != 5, case.source
        assert case.check == f"assert v[0] == {sum(xs)}, {json.dumps(case.calls[0])}"


def test_generation_is_reproducible_by_seed(private_cache: Path) -> None:
    from suites import load_suite

    problems = load_suite("humaneval", "test[20:23]")
    sandbox = shared_sandbox(SandboxSettings())

    def generate(cache: str, seed: int) -> list[list[str]]:
        os.environ["CODEEVAL_CACHE"] = str(private_cache / cache)
        expanded = expand_plus(request_plus(problems, 12, seed=seed), sandbox)
        return [[c.source for c in plus_cases(p)] for p in expanded]

    first = generate("a", 0)
    assert all(first) and first == generate("b", 0)  # same seed, fresh cache: same cases
    assert first != generate("c", 1)
    assert first == generate("a", 0)  # and the cache gives them back


# -- real pytest sessions ----------------------------------------------------------------------
def run_session(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("-p", "no:codeeval_gate", "-p", "no:cacheprovider", *args)


def test_references_pass_all_their_plus_cases(pytester: pytest.Pytester, shared_data: Path) -> None:
    out = pytester.path / "out"
    result = run_session(
        pytester, "--llm-eval", "humaneval,mbpp-sanitized", "--llm-split", "test[:5]",
        "--llm-plus", "32", "--llm-samples", "canonical", "--llm-data-dir", str(shared_data),
        "--llm-out", str(out),
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-3000:]
    rows = read_jsonl(out / "results.jsonl")
    assert len(rows) == 10 and all(r["status"] == "passed" for r in rows)
    plus_counts = [sum(bool(c.get("plus")) for c in r["cases"]) for r in rows]
    assert sum(n > 0 for n in plus_counts) >= 8 and max(plus_counts) == 32
    summary = json.loads((out / "summary.json").read_text())["suites"]
    for suite in ("humaneval", "mbpp-sanitized"):
        assert summary[suite]["pass@1"] == summary[suite]["base"]["pass@1"] == 1.0
    module = (out / "suite" / "humaneval" / "test_HumanEval_0.py").read_text()
    assert "@pytest.mark.plus\ndef test_plus_0(sandbox):" in module
    assert '"""assert candidate(' in module  # the literal input and expected value, readable


def test_llm_plus_on_a_users_suite(pytester: pytest.Pytester) -> None:
    problems = write_jsonl(pytester.path / "problems.jsonl", [{
        "task_id": "mine/largest",
        "prompt": "def largest(xs: list) -> int:\n    \"\"\"The largest element of xs.\"\"\"\n",
        "entry_point": "largest",
        "canonical_solution": "    return max(xs)\n",
        "test": "def check(candidate):\n    assert candidate([1, 5, 2]) == 5\n"
        "    assert candidate([7]) == 7\n",
    }])  # fmt: skip
    samples = write_jsonl(pytester.path / "samples.jsonl", [
        {"task_id": "mine/largest", "sample_id": "right", "completion": "    return max(xs)\n"},
        {"task_id": "mine/largest", "sample_id": "starts-at-0",
         "completion": "    m = 0\n    for x in xs:\n        m = max(m, x)\n    return m\n"},
    ])  # fmt: skip
    out = pytester.path / "out"
    result = run_session(
        pytester, "--llm-eval", f"jsonl:{problems}", "--llm-samples", str(samples),
        "--llm-plus", "8", "--llm-out", str(out), "--llm-k", "1",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*original checks -> with plus cases: pass@1 1.000 -> 0.500*"])
    rows = {r["sample_id"]: r for r in read_jsonl(out / "results.jsonl")}
    assert rows["right"]["passed"] and rows["right"]["base_passed"]
    wrong = rows["starts-at-0"]
    assert wrong["base_passed"] and not wrong["passed"]
    failed = [c for c in wrong["cases"] if c["status"] != "passed"]
    assert failed and all(c.get("plus") for c in failed)
    assert "AssertionError: candidate([-" in failed[0]["message"]  # the input that told it
    suite = json.loads((out / "summary.json").read_text())["suites"][f"jsonl:{problems}"]
    assert (suite["base"]["pass@1"], suite["pass@1"]) == (1.0, 0.5)
    assert 0 < suite["base"]["plus_cases"] <= 8
    from harness.report import write_report
    from harness.report.rundata import load_out_dir

    report = write_report(load_out_dir(out), out / "report.html").read_text()
    assert "Plus cases: drop per problem" in report and "mine/largest" in report


def test_a_suite_and_its_plus_suite_in_one_run_is_a_usage_error(
    pytester: pytest.Pytester, shared_data: Path
) -> None:
    # humaneval-plus is read from the mirror (the check compares the loaded task ids).
    result = run_session(
        pytester, "--llm-eval", "humaneval,humaneval-plus", "--llm-split", "test[:1]",
        "--llm-samples", "canonical",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*humaneval and humaneval-plus share task ids*suites.<suite>.base*"]
    )


def test_plus_catches_the_realistic_wrong_programs(shared_data: Path) -> None:
    """At least 80% of the wrong programs that pass the original checks fail a plus case."""
    from harness.evaluate import evaluate
    from harness.records import Sample
    from suites import load_suite

    wrong = read_jsonl(WRONG_PROGRAMS)
    assert len(wrong) >= 30
    tasks = {w["task_id"] for w in wrong}
    everything = load_suite("humaneval") + load_suite(
        "mbpp-sanitized", "train+test+validation+prompt", shared_data
    )
    problems = request_plus([p for p in everything if p.task_id in tasks])
    samples = [Sample(w["task_id"], w["completion"], f"wrong{i}") for i, w in enumerate(wrong)]
    rows = evaluate(problems, samples)  # the real sandbox, judged as the plugin judges
    not_base = [w["task_id"] for w, r in zip(wrong, rows, strict=True) if not r["base_passed"]]
    assert not not_base, f"these no longer pass the original checks: {not_base}"
    caught = [w["task_id"] for w, r in zip(wrong, rows, strict=True) if not r["passed"]]
    assert len(caught) >= 0.8 * len(wrong), f"caught {len(caught)} of {len(wrong)}"


# -- the whole benchmarks (the slow tier: about 2 minutes of generation each, cold) -------------
@pytest.mark.slow
@pytest.mark.parametrize("suite", ["humaneval", "mbpp-sanitized"])
def test_every_reference_passes_all_its_plus_cases(
    pytester: pytest.Pytester, shared_data: Path, suite: str
) -> None:
    out = pytester.path / "out"
    result = run_session(
        pytester, "--llm-eval", suite, "--llm-plus", "32", "--llm-samples", "canonical", "-n", "2",
        "--llm-data-dir", str(shared_data), "--llm-out", str(out),
    )  # fmt: skip
    rows = read_jsonl(out / "results.jsonl")
    bad = [(r["task_id"], r["status"]) for r in rows if r["status"] != "passed"]
    summary = json.loads((out / "summary.json").read_text())
    defects = {d["task_id"] for d in summary["data_errors"]}
    # Known data defects of the benchmark (references failing their own checks) stay as such.
    assert all(task in defects for task, _ in bad), (bad, result.stdout.str()[-2000:])
    flaky = [d for d in summary["data_errors"] if "flaky" in d["reason"]]
    assert not flaky
