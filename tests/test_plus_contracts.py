"""EvalPlus's contracts in the plus generator: an input a problem's contract refuses never
becomes a plus case.

The contracts are EvalPlus's own (HumanEval+ v0.1.10's ``contract`` field, or a suite's
``metadata["contract"]``); they run in the real sandbox in front of the reference. Each test
restates a contract here, independently, as a plain predicate, and checks the generator
against it.
"""

from __future__ import annotations

import ast
import dataclasses
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.completions import assemble_program
from harness.plus import expand_plus, request_plus
from harness.plus.cases import is_plus
from harness.plus.contracts import CHECKED, evalplus_contract, guarded_program
from harness.plus.generate import plus_cases_for
from harness.plus.runner import reference_runs
from harness.plus.signature import literal_inputs
from harness.records import Problem
from harness.sandbox import SandboxSettings
from harness.sandbox.shared import shared_sandbox
from suites import load_suite
from suites.humaneval import problem_from_record


def _balanced(s: str) -> bool:
    depth = 0
    for ch in s:
        if ch not in "() ":
            return False
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth < 0:
            return False
    return depth == 0


def _is_prime(n: int) -> bool:
    return n >= 2 and all(n % d for d in range(2, int(n**0.5) + 1))


# The contracts of the problems the issue names, restated (HumanEval+ v0.1.10).
CONTRACTS: dict[str, Callable[..., bool]] = {
    "HumanEval/6": lambda s: isinstance(s, str) and _balanced(s),
    "HumanEval/50": lambda s: s == "" or s.islower(),
    "HumanEval/94": lambda lst: any(_is_prime(x) for x in lst),
    "HumanEval/116": lambda arr: all(type(x) is int and x >= 0 for x in arr),
    "HumanEval/135": lambda arr: len(arr) == len(set(arr)),
}
INPUTS: dict[str, st.SearchStrategy[tuple[Any, ...]]] = {
    "HumanEval/6": st.tuples(st.text("() ", max_size=12)),
    "HumanEval/50": st.tuples(st.text("abzAZ 1", max_size=8)),
    "HumanEval/94": st.tuples(st.lists(st.integers(0, 30), min_size=1, max_size=6)),
    "HumanEval/116": st.tuples(st.lists(st.integers(-9, 9), max_size=6)),
    "HumanEval/135": st.tuples(st.lists(st.integers(-3, 3), max_size=6)),
}


@pytest.fixture(scope="module")
def humaneval(shared_data: Path) -> dict[str, Problem]:
    os.environ.setdefault("CODEEVAL_DATA_DIR", str(shared_data))  # EvalPlus's contracts
    return {p.task_id: p for p in load_suite("humaneval") if p.task_id in CONTRACTS}


@pytest.fixture
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CODEEVAL_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def call_args(call: str) -> tuple[Any, ...]:
    node = ast.parse(call, mode="eval").body
    assert isinstance(node, ast.Call)
    return tuple(ast.literal_eval(a) for a in node.args)


def test_the_contract_is_evalplus_own(monkeypatch: pytest.MonkeyPatch, shared_data: Path) -> None:
    monkeypatch.setenv("CODEEVAL_DATA_DIR", str(shared_data))
    monkeypatch.delenv("HUMANEVAL_OVERRIDE_PATH", raising=False)
    assert "x >= 0" in evalplus_contract("HumanEval/116", {})
    assert "len(arr) == len(set(arr))" in evalplus_contract("HumanEval/135", {})
    assert evalplus_contract("HumanEval/116", {"contract": "    assert False\n"}) == (
        "    assert False\n"
    )  # a suite's own contract wins
    assert evalplus_contract("Mbpp/2", {}) == "" and evalplus_contract("mine/1", {}) == ""


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), task_id=st.sampled_from(sorted(CONTRACTS)))
def test_the_guarded_reference_answers_exactly_the_inputs_the_contract_allows(
    data: st.DataObject, task_id: str, humaneval: dict[str, Problem]
) -> None:
    problem = humaneval[task_id]
    inputs = data.draw(st.lists(INPUTS[task_id], min_size=1, max_size=12, unique_by=repr))
    program = assemble_program(problem, problem.reference).program
    guarded = guarded_program(program, problem.entry_point, evalplus_contract(task_id, {}))
    assert guarded is not None and guarded != program
    sandbox = shared_sandbox(SandboxSettings())
    checked = reference_runs(problem, guarded, inputs, sandbox, timeout_s=2.0, callee=CHECKED)
    plain = reference_runs(problem, program, inputs, sandbox, timeout_s=2.0)
    for args, run, bare in zip(inputs, checked, plain, strict=True):
        assert (run.status == "ok") == CONTRACTS[task_id](*args), (args, run)
        if run.status == "ok":  # the contract changes nothing where it holds
            assert (bare.status, bare.value) == ("ok", run.value), (args, bare)


def test_plus_cases_of_the_issues_problems_respect_their_contracts(
    humaneval: dict[str, Problem], private_cache: Path
) -> None:
    expanded = expand_plus(
        request_plus(list(humaneval.values()), 16), shared_sandbox(SandboxSettings())
    )
    for problem in expanded:
        cases = [c for c in problem.cases if is_plus(c.case_id)]
        assert cases, problem.metadata["plus"]
        assert problem.metadata["plus"]["contract"] is True
        for case in cases:
            assert CONTRACTS[problem.task_id](*call_args(case.calls[0])), case.source


def test_a_contract_that_cannot_be_applied_gives_no_plus_cases(private_cache: Path) -> None:
    record = {
        "task_id": "mine/0",
        "prompt": "def double(x: int) -> int:\n",
        "entry_point": "double",
        "canonical_solution": "    return 2 * x\n",
        "test": "def check(candidate):\n    assert candidate(2) == 4\n",
    }
    problem = problem_from_record(record, "mine")
    broken = dataclasses.replace(problem, metadata={"contract": "    assert (x >\n"})
    result = plus_cases_for(broken, shared_sandbox(SandboxSettings()), count=8, seed=0)
    assert result.cases == () and "contract" in result.reason
    allowed = dataclasses.replace(problem, metadata={"contract": "    assert x % 2 == 0\n"})
    result = plus_cases_for(allowed, shared_sandbox(SandboxSettings()), count=8, seed=0)
    assert result.cases, result.stats
    assert all(call_args(c.calls[0])[0] % 2 == 0 for c in result.cases)


def test_on_evalplus_suites_only_the_base_inputs_seed_generation(
    monkeypatch: pytest.MonkeyPatch, shared_data: Path, private_cache: Path
) -> None:
    """HumanEval+'s plus inputs are what generated cases are measured against: never seeds."""
    monkeypatch.setenv("CODEEVAL_DATA_DIR", str(shared_data))
    (problem,) = [p for p in load_suite("humaneval-plus") if p.task_id == "HumanEval/3"]
    inputs: dict[bool, set[str]] = {True: set(), False: set()}  # by is_plus
    for case in problem.cases:  # EvalPlus's calls spread one literal list: candidate(*[...])
        (args,) = call_args(case.calls[0].replace("candidate(*", "candidate(", 1))
        inputs[is_plus(case.case_id)].add(repr(args))
    seeds = {repr(list(args)) for args in literal_inputs(problem)}
    assert inputs[False] <= seeds and not seeds & (inputs[True] - inputs[False])
    result = plus_cases_for(problem, shared_sandbox(SandboxSettings()), count=8, seed=0)
    assert result.cases and result.stats["contract"] is True, result.stats
    assert all(c.case_id.startswith("plus_gen_") and is_plus(c.case_id) for c in result.cases)
