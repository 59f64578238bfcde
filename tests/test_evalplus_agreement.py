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


# Problems whose references answer past the channel's decoding bounds on some inputs (strings
# of 6.9 M characters, ints of 3.3 M bits, lists of a million numbers, 1.6 M tuples): judged
# by digest (docs/evalplus.md); they were data defects before.
PAST_THE_BOUNDS = {
    "humaneval-plus": ["HumanEval/15", "HumanEval/83", "HumanEval/100", "HumanEval/130"]
    + ["HumanEval/139"],
    "mbpp-plus": ["Mbpp/255"],
}
# Right by == though not by form (ints where the reference has integral floats), and wrong
# only on the largest inputs: evalplus passes the first and fails the second.
OTHER_ANSWERS = {
    "HumanEval/130": [
        "def tri(n):\n    if n == 0: return [1]\n    ans = [1, 3]\n"
        "    for i in range(2, n + 1):\n"
        "        ans.append(1 + i // 2 if i % 2 == 0 else ans[-1] + ans[-2] + 1 + (i + 1) // 2)\n"
        "    return ans[: n + 1]\n",
        "def tri(n):\n    ans = [1, 3]\n    for i in range(2, n + 1):\n"
        "        ans.append(1 + i / 2 if i % 2 == 0 else ans[-1] + ans[-2] + 1 + (i + 1) / 2)\n"
        "    return ans[: n + 1] if n < 10**6 else ans[:n]\n",
    ],
    "HumanEval/15": [
        "def string_sequence(n):\n    return ' '.join(str(i) for i in range(n + 1))\n",
        "def string_sequence(n):\n"
        "    return ' '.join(map(str, range(n + 1))) + (' ' if n >= 10**6 else '')\n",
    ],
    "HumanEval/83": [
        "def starts_one_ends(n):\n    return 1 if n == 1 else 18 * 10 ** (n - 2) + (n > 10**5)\n"
    ],
    "Mbpp/255": [
        "def combinations_colors(l, n):\n    import itertools\n"
        "    return [tuple(c) for c in itertools.combinations_with_replacement(l, n)]\n",
        "def combinations_colors(l, n):\n    import itertools\n"
        "    return [list(c) for c in itertools.combinations_with_replacement(l, n)]\n",
    ],
}


# Programs that answer exactly as the reference on these problems: the reference, and the
# wrappers that change only a float or a tuple answer (no answer here is either at the top).
SAME_ANSWERS_AS_THE_REFERENCE = ("reference-", "float-noise-", "tuple-as-list-")


@pytest.mark.parametrize("suite", sorted(PAST_THE_BOUNDS))
def test_problems_past_the_bounds_agree_with_evalplus(
    shared_data: Path, tmp_path: Path, suite: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from benchmarks.evalplus_programs import Program

    # At its default 4 GiB of address space evalplus fails its own reference on Mbpp/255
    # (1.6 M tuples answered and expected); with room it judges as it means to.
    monkeypatch.setenv("EVALPLUS_MAX_MEMORY_BYTES", str(16 * 2**30))

    wanted = PAST_THE_BOUNDS[suite]
    problems = [p for p in load_suite(suite, data_dir=shared_data) if p.task_id in wanted]
    assert len(problems) == len(wanted)
    programs = make_programs(problems, mutants_per_problem=2)
    programs += [
        Program(task, "other", source)
        for task, sources in OTHER_ANSWERS.items()
        if task in wanted
        for source in sources
    ]
    path = data_file(suite, shared_data)
    assert path is not None
    # An input's limit in evalplus is 4 times its reference's time, measured once: the 1.6 M
    # tuples of Mbpp/255 walked again by a wrapper went past it on a loaded CI machine, and
    # evalplus failed a program that answers as the reference does. Verdicts, not speed, are
    # compared here.
    theirs, _ = run_evalplus(suite, path, problems, programs, fast_check=True, time_limit_factor=20)
    ours = run_project(problems, programs, workers=2, out=tmp_path / "out")
    result = compare(ours, theirs)
    assert not result.data_defects and result.compared == len(programs)
    # evalplus's own verdict on Mbpp/255's largest inputs depends on the machine: a task gets
    # 61 s in all whatever the factor (EVALPLUS_TIMEOUT_PER_TASK cannot raise it: evalplus
    # 0.3.1 compares the variable's text with a number), and on a loaded CI machine it failed
    # programs that answer as the reference does. Only those may disagree, only on a problem
    # listed as evalplus's known defect, and only as evalplus failing what the project passed.
    for disagreement in result.disagreements:
        assert "known" in disagreement, disagreement
        assert disagreement["sample_id"].startswith(SAME_ANSWERS_AS_THE_REFERENCE), disagreement
        assert disagreement["project"]["plus"] and disagreement["evalplus"]["base"] == "pass"
    others = {k: v for k, v in theirs.items() if k[1].startswith("other-")}
    assert {v["plus"] == "pass" for v in others.values()} == {True, False}  # both kinds
    assert all(theirs[k]["base"] == "pass" for k in theirs if k[1].startswith("reference-"))
