"""CoopHumanEval adapter on a local fixture of the hub's shape (the hub is never needed)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from suites.coophumaneval import SuiteDataError, load, problem_from_record
from suites.registry import load_suite

FIXTURE = Path(__file__).parent / "fixtures" / "coophumaneval_small.jsonl"


def test_loads_fixture_as_problems() -> None:
    problems = load(path=FIXTURE)["test"]
    assert [p.task_id for p in problems] == [f"CoopHumanEval/{i}" for i in range(4)]
    first = problems[0]
    assert first.suite == "coophumaneval" and first.entry_point == "sum_of_squares"
    assert first.metadata["roles"] == ["aux", "sum_of_squares"]
    assert first.test_setup == "METADATA = {'author': 'fixture'}"
    assert [(c.mode, c.calls, c.check) for c in first.cases][0] == (
        "compare",
        ("candidate([1, 2, 3])",),
        "assert v[0] == 14",
    )
    # The loop check of problem 1 runs over literal values: one compare case per value.
    assert [(c.case_id, c.mode) for c in problems[1].cases] == [
        ("case_0", "compare"),
        ("case_1", "compare"),
        ("case_2", "compare"),
        ("case_3_0", "compare"),
        ("case_3_1", "compare"),
    ]
    assert not any(p.defects for p in problems)


def test_data_dir_env_and_split(tmp_path, monkeypatch) -> None:
    (tmp_path / "CoopHumanEval.jsonl").write_text(FIXTURE.read_text())
    assert [p.task_id for p in load_suite("coophumaneval", "test[1:3]", tmp_path)] == [
        "CoopHumanEval/1",
        "CoopHumanEval/2",
    ]
    monkeypatch.setenv("CODEEVAL_DATA_DIR", str(tmp_path))
    assert len(load_suite("CoopHumanEval", "test[-1:]")) == 1
    # A fixtures folder: the small fixture is found by its name's prefix.
    assert len(load_suite("coophumaneval", "test", FIXTURE.parent)) == 4


def test_errors_name_file_line_and_field(tmp_path) -> None:
    lines = FIXTURE.read_text().splitlines()
    record = json.loads(lines[2])
    del record["entry_point"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([lines[0], lines[1], json.dumps(record)]) + "\n")
    with pytest.raises(SuiteDataError, match=r"bad.jsonl:3: field 'entry_point'"):
        load(path=bad)
    bad.write_text(lines[0] + "\n{not json\n")
    with pytest.raises(SuiteDataError, match=r"bad.jsonl:2: not valid JSON"):
        load(path=bad)
    bad.write_text(lines[0] + "\n" + lines[0] + "\n")
    with pytest.raises(SuiteDataError, match=r"bad.jsonl:2: field 'task_id'.*twice"):
        load(path=bad)


def test_unusable_check_is_a_defect_not_a_crash() -> None:
    record = {"task_id": "CoopHumanEval/9", "prompt": "def f():\n", "entry_point": "f"}
    no_check = problem_from_record({**record, "test": "x = 1\n"}, "f.jsonl:7")
    assert no_check.cases == () and no_check.defects[0].startswith("f.jsonl:7: test:")
    empty = problem_from_record({**record, "test": "def check(c):\n    pass\n"}, "f.jsonl:8")
    assert "holds no check" in empty.defects[0]


def test_no_local_file_and_no_hub_is_a_clear_error(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("CODEEVAL_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    code = "from suites.coophumaneval import load\nload()"
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert done.returncode != 0
    assert "OpenMLRL/CoopHumanEval could not be loaded" in done.stderr


def test_reference_solutions_pass_their_checks() -> None:
    """Each fixture reference (with its aux helper) satisfies its own cases when run."""
    for problem in load(path=FIXTURE)["test"]:
        namespace: dict = {}
        exec(problem.reference, namespace)
        tests: dict = {"candidate": namespace[problem.entry_point]}
        exec(problem.test_setup, tests)
        for case in problem.cases:
            exec(case.prelude, tests)
            if case.mode == "compare":
                tests["v"] = [eval(call, tests) for call in case.calls]
                exec(case.check, tests)
            else:
                tests["__plain__"] = lambda value: value
                exec(case.statement, tests)
