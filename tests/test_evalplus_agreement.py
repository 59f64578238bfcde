"""The project's verdicts on HumanEval+ and MBPP+ agree with ``evalplus`` 0.3.1's own evaluator
(slow tier: evalplus runs for real, offline, pointed at the shared mirror).

A subset of problems chosen to cover EvalPlus's oracles: float outputs (atol), HumanEval/32's
polynomial, MBPP+'s set-equality, not-None and special oracles, and inputs rebuilt as tuples
and complex numbers. The programs are benchmarks/evalplus_programs.py's: references, mutants,
wrong-on-edge-case, float-noise and tuple-as-list wrappers. The full comparison is
``python -m benchmarks.evalplus_agreement`` (docs/evalplus.md gives its numbers).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from benchmarks.evalplus_programs import compare, make_programs, run_evalplus, run_project
from suites.evalplus import data_file
from suites.registry import load_suite

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("evalplus") is None,
        reason="evalplus (a peer, `make setup` installs it) is not installed",
    ),
]

TASKS = {
    "humaneval-plus": ["HumanEval/2", "HumanEval/4", "HumanEval/32", "HumanEval/45", "HumanEval/71"]
    + ["HumanEval/0", "HumanEval/12", "HumanEval/20", "HumanEval/106", "HumanEval/151"],
    "mbpp-plus": ["Mbpp/2", "Mbpp/124", "Mbpp/252", "Mbpp/250", "Mbpp/558", "Mbpp/581"]
    + ["Mbpp/7", "Mbpp/737", "Mbpp/306", "Mbpp/580", "Mbpp/722", "Mbpp/794"],
}


@pytest.mark.parametrize("suite", sorted(TASKS))
def test_verdicts_agree_with_evalplus(shared_data: Path, tmp_path: Path, suite: str) -> None:
    problems = [p for p in load_suite(suite, data_dir=shared_data) if p.task_id in TASKS[suite]]
    assert len(problems) == len(TASKS[suite])
    programs = make_programs(problems, mutants_per_problem=3)
    path = data_file(suite, shared_data)
    assert path is not None
    theirs, _ = run_evalplus(suite, path, problems, programs, fast_check=True)
    ours = run_project(problems, programs, workers=2, out=tmp_path / "out")
    result = compare(ours, theirs)
    assert not result.data_defects
    assert result.compared == len(programs) >= 4 * len(problems)
    # the programs tell the verdicts apart: some pass, some fail on plus inputs only
    plus_only = [k for k, v in theirs.items() if v["base"] == "pass" and v["plus"] != "pass"]
    assert plus_only and any(v["plus"] == "pass" for v in theirs.values())
    # evalplus 0.3.1 fails every program on HumanEval/32: its find_zero oracle checks
    # |poly(x)| <= atol and then skips counting the input as passed, so no input is ever
    # counted. The project judges the oracle as meant (docs/evalplus.md); that is the one
    # known difference, and the only one allowed here.
    known = [k for k in theirs if k[0] == "HumanEval/32"]
    assert all(theirs[k]["base"] == "fail" for k in known)
    others = [d for d in result.disagreements if d["task_id"] != "HumanEval/32"]
    assert not others, others
    fine = [d for d in result.false_fails if d["task_id"] != "HumanEval/32"]
    assert not fine, fine
