"""ClassEval adapter: records from the local mirror, method metadata, defects, runnable cases."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.records import problem_from_json, to_json
from suites.classeval import RUNNER_NAME, SuiteDataError, load, problem_from_record
from suites.registry import load_suite

DATA_DIR = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
pytestmark = pytest.mark.skipif(
    not (DATA_DIR / "ClassEval_data.json").is_file(), reason="no ../shared/data mirror"
)


@pytest.fixture(scope="module")
def problems():
    return load(data_dir=DATA_DIR)["test"]


def test_all_classes_and_methods_load(problems) -> None:
    assert len(problems) == 100
    assert sum(len(p.metadata["methods"]) for p in problems) == 410
    first = problems[0]
    assert first.suite == "classeval" and first.task_id == "ClassEval_0"
    assert first.entry_point == "AccessGatewayFilter"
    assert first.candidate_names == ("AccessGatewayFilter",)
    assert first.prompt.startswith("import logging") and "class AccessGatewayFilter" in first.prompt
    assert "def is_start_with" in first.reference
    assert [c.mode for c in first.cases] == ["sandbox"] * 4
    assert first.cases[0].statement == (
        f"{RUNNER_NAME}(AccessGatewayFilterTestFilter, candidate, 'AccessGatewayFilter')"
    )
    assert first.cases[0].source.startswith("class AccessGatewayFilterTestFilter(")
    assert "AccessGatewayFilterTestFilter.__test__ = False" in first.test_setup


def test_method_metadata(problems) -> None:
    method = problems[0].metadata["methods"][0]
    assert method["name"] == "filter"
    assert method["signature"] == "def filter(self, request)"
    assert method["docstring"].startswith("Filter the incoming request")
    assert method["dependencies"]["methods"] == [
        "is_start_with",
        "get_jwt_user",
        "set_current_user_info_and_log",
    ]
    assert method["test_class"] == "AccessGatewayFilterTestFilter"


def test_known_defects_reported(problems) -> None:
    by_id = {p.task_id: p for p in problems}
    assert any("skeleton" in d and "does not parse" in d for d in by_id["ClassEval_22"].defects)
    assert any("gensim" in d for d in by_id["ClassEval_93"].defects)
    assert any("nltk" in d for d in by_id["ClassEval_52"].defects)
    # PyPDF2 is allowed (harness.deps): a defect until `codeeval deps fetch classeval` ran.
    from harness.deps.overlay import ready_site
    from suites.classeval import DEPENDENCIES

    if ready_site(DEPENDENCIES) is None:
        assert any("PyPDF2" in d for d in by_id["ClassEval_69"].defects)
    else:
        assert not by_id["ClassEval_69"].defects
    assert all(d.startswith(str(DATA_DIR)) for p in problems for d in p.defects)
    # A stray space in the upstream test_classes list is not a defect.
    assert not by_id["ClassEval_97"].defects
    assert len(by_id["ClassEval_97"].cases) == len(by_id["ClassEval_97"].metadata["test_classes"])


def test_split_slices_and_json_round_trip(problems) -> None:
    part = load_suite("classeval", "test[98:]", data_dir=DATA_DIR)
    assert [p.task_id for p in part] == ["ClassEval_98", "ClassEval_99"]
    assert problem_from_json(json.loads(json.dumps(to_json(part[0])))) == part[0]


def test_errors_name_the_record_and_field(tmp_path) -> None:
    with pytest.raises(SuiteDataError, match=r"rec\[3\]: field 'class_name'"):
        problem_from_record(
            {"task_id": "x", "skeleton": "s", "test": "t", "solution_code": "c"}, "rec[3]"
        )
    bad = tmp_path / "ClassEval_data.json"
    bad.write_text('[{"task_id": 1,\n oops}]')
    with pytest.raises(SuiteDataError, match=r"ClassEval_data.json:2: not valid JSON"):
        load(data_dir=tmp_path)


RUN_CASES = r"""
import json, os, sys, tempfile
from harness.records import problem_from_json
problem = problem_from_json(json.loads(sys.stdin.read()))
os.chdir(tempfile.mkdtemp())
out = {}
for label, program in (("reference", problem.reference), ("skeleton", problem.prompt)):
    prog, tests = {}, {}
    exec(program, prog)
    exec(problem.test_setup, tests)
    tests["candidate"] = prog[problem.entry_point]
    for case in problem.cases:
        try:
            exec(case.statement, tests)
            out[f"{label}/{case.case_id}"] = "ok"
        except AssertionError as exc:
            out[f"{label}/{case.case_id}"] = "assertion: " + str(exc)
print(json.dumps(out))
"""


@pytest.mark.parametrize("index", [0, 47, 99])
def test_cases_pass_reference_and_fail_skeleton(problems, index: int) -> None:
    """The statements run in a fresh interpreter: the reference passes, a bare skeleton fails."""
    problem = problems[index]
    assert not problem.defects
    done = subprocess.run(
        [sys.executable, "-c", RUN_CASES],
        input=json.dumps(to_json(problem)),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    assert all(v == "ok" for k, v in outcome.items() if k.startswith("reference/")), outcome
    failed = [v for k, v in outcome.items() if k.startswith("skeleton/")]
    assert failed and all(v.startswith("assertion: ") for v in failed)
    assert "tests failed; first: test_" in failed[0]


@pytest.mark.slow
def test_references_pass_through_the_real_sandbox(pytester: pytest.Pytester) -> None:
    # Through the plugin, the fork server and (where installed) bubblewrap, as the dropped
    # user: every reference passes unless it is a listed data defect. (With an interpreter in a
    # folder the dropped user could not read, every one of them failed: their tests import
    # unittest.)
    out = pytester.path / "out"
    result = pytester.runpytest(
        "--llm-eval", "classeval", "--llm-samples", "canonical", "--llm-data-dir",
        str(DATA_DIR.resolve()), "--llm-out", str(out), "-n", "2", "-q", "-p", "no:codeeval_gate",
    )  # fmt: skip
    summary = json.loads((out / "summary.json").read_text())
    entry = summary["suites"]["classeval"]
    assert entry["samples"] == 100
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    clock_flakes = [row for row in rows if _failed_on_the_clock(row)]
    assert entry["failed"] == len(clock_flakes), summary["data_errors"]
    assert entry["timeout"] == entry["errors"] == 0, summary["data_errors"]
    assert entry["passed"] + entry["data_errors"] + len(clock_flakes) == 100
    assert entry["passed"] >= 80
    assert "ClassEval_58" in {d["task_id"] for d in summary["data_errors"]}
    assert result.ret == pytest.ExitCode.OK


def _failed_on_the_clock(row: dict) -> bool:
    """ClassEval_20's reference failing its own clock test: ``test_send_message`` takes
    ``datetime.now()`` to the second, then compares it with the time the class records a few
    bridge round trips later, so it fails (rarely) when a second ticks in between. That is the
    data's own behaviour, which the plugin keeps; only that failure is let through."""
    if row["task_id"] != "ClassEval_20" or row["status"] != "failed":
        return False
    messages = [case["message"] for case in row["cases"] if case["status"] != "passed"]
    return all(_CLOCK_FAILURE.search(message) for message in messages)


# unittest's shortened diff of two message lists that differ in their timestamps' seconds
_CLOCK_FAILURE = re.compile(
    r"first: test_(send_message|main): AssertionError: \{'Joh.*:\d\d'\}\].* != \{'Joh"
)
