"""The agreement benchmark's programs are the programs they claim to be.

benchmarks/evalplus_programs.py wraps each reference to make programs that are wrong in a
known way (None on empty or zero arguments, float noise, a tuple returned as a list). A
wrapper that does not compile fails on both sides and would count as agreement, so these
run the wrapped programs here (they are the project's own code) and check what they answer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchmarks.evalplus_programs import make_programs
from suites.registry import load_suite


def _entry(source: str, name: str) -> Any:
    scope: dict[str, Any] = {}
    exec(compile(source, name, "exec"), scope)  # noqa: S102 - the project's own programs
    return scope[name]


@pytest.fixture(scope="module")
def programs(shared_data: Path) -> dict[tuple[str, str], str]:
    wanted = {"HumanEval/0", "HumanEval/2", "HumanEval/8"}
    problems = [
        p for p in load_suite("humaneval-plus", data_dir=shared_data) if p.task_id in wanted
    ]
    assert len(problems) == len(wanted)
    return {(p.task_id, p.kind): p.source for p in make_programs(problems, 2)}


def test_every_program_compiles_and_each_problem_has_each_kind(
    programs: dict[tuple[str, str], str],
) -> None:
    for (task_id, kind), source in programs.items():
        compile(source, f"{task_id} ({kind})", "exec")
    kinds = {kind for _, kind in programs}
    assert {"reference", "mutant", "edge", "float-noise", "tuple-as-list"} <= kinds


def test_edge_wrapper_answers_none_on_an_empty_argument_and_the_reference_elsewhere(
    programs: dict[tuple[str, str], str],
) -> None:
    edge = _entry(programs["HumanEval/0", "edge"], "has_close_elements")
    reference = _entry(programs["HumanEval/0", "reference"], "has_close_elements")
    assert reference([], 0.5) is False and edge([], 0.5) is None
    assert edge([1.0, 1.2], 0.5) is reference([1.0, 1.2], 0.5) is True


def test_float_noise_and_tuple_as_list_wrappers_change_only_their_type_of_output(
    programs: dict[tuple[str, str], str],
) -> None:
    noisy = _entry(programs["HumanEval/2", "float-noise"], "truncate_number")
    assert noisy(3.5) == pytest.approx(0.5 + 1e-7, abs=1e-12) and noisy(3.5) != 0.5
    as_list = _entry(programs["HumanEval/8", "tuple-as-list"], "sum_product")
    reference = _entry(programs["HumanEval/8", "reference"], "sum_product")
    assert reference([1, 2]) == (3, 2) and as_list([1, 2]) == [3, 2]


def test_a_baseline_checkout_runs_its_own_code(shared_data: Path, tmp_path: Path) -> None:
    """``evalplus_speed --baseline DIR`` times another checkout's code beside this one's: the
    run imports the harness from that checkout (here a copy whose evaluate marks its rows), and
    judges the same programs."""
    import shutil

    from benchmarks.evalplus_programs import run_project_fresh

    root = Path(__file__).resolve().parents[1]
    copy = tmp_path / "checkout"
    for part in ("harness", "suites", "plugin", "benchmarks"):
        shutil.copytree(root / part, copy / part, ignore=shutil.ignore_patterns("__pycache__"))
    evaluate = copy / "harness" / "evaluate.py"
    evaluate.write_text(
        evaluate.read_text().replace(
            "        return evaluate_local(problems, samples, **options)",
            "        return [dict(r, baseline=True) for r in evaluate_local(problems, samples, **options)]",
        )
    )
    problems = [p for p in load_suite("humaneval-plus", data_dir=shared_data)[:1]]
    programs = make_programs(problems, 1)[:2]
    ours, _ = run_project_fresh("humaneval-plus", shared_data, problems, programs)
    theirs, seconds = run_project_fresh(
        "humaneval-plus", shared_data, problems, programs, checkout=copy
    )
    assert seconds > 0 and all(row.get("baseline") for row in theirs.values())
    assert not any(row.get("baseline") for row in ours.values())
    assert {k: r["status"] for k, r in theirs.items()} == {k: r["status"] for k, r in ours.items()}


def test_the_parts_cost_times_only_the_passing_programs(shared_data: Path) -> None:
    """``evalplus_speed --parts-cost`` times the programs that passed, in parts and whole: a
    wrong one (here a mutant that fails) is left out, and each way is timed."""
    from benchmarks.evalplus_programs import run_project_fresh
    from benchmarks.evalplus_speed import parts_cost_s

    problems = [p for p in load_suite("humaneval-plus", data_dir=shared_data)[:1]]
    programs = make_programs(problems, 1)[:2]
    rows, _ = run_project_fresh("humaneval-plus", shared_data, problems, programs)
    statuses = {(p.task_id, p.sample_id): rows[p.task_id, p.sample_id]["status"] for p in programs}
    assert sorted(statuses.values()) == ["failed", "passed"]  # the reference and a mutant
    parts_s, whole_s, passing = parts_cost_s(
        "humaneval-plus", shared_data, problems, programs, rows, workers=2
    )
    assert [(p.task_id, p.sample_id) for p in passing] == [
        key for key, status in statuses.items() if status == "passed"
    ]
    assert parts_s > 0 and whole_s > 0
