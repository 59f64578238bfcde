"""The plugin end to end, in real pytest sessions (pytester), on a small JSONL suite."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

PROBLEMS = [
    {
        "task_id": "toy/add",
        "prompt": 'def add(a, b):\n    """Return a + b."""\n',
        "entry_point": "add",
        "canonical_solution": "    return a + b\n",
        "test": "def check(candidate):\n"
        "    assert candidate(1, 2) == 3\n"
        "    assert candidate(-1, 1) == 0\n"
        "    assert candidate(10, 5) == 15\n",
    },
    {
        "task_id": "toy/halve",
        "prompt": 'def halve(x):\n    """Return x / 2."""\n',
        "entry_point": "halve",
        "canonical_solution": "    return x / 2\n",
        "test": "def check(candidate):\n"
        "    assert abs(candidate(3) - 1.5) < 1e-9\n"
        "    assert candidate(0) == 0\n",
    },
]

SAMPLES = [
    {"task_id": "toy/add", "sample_id": "right", "completion": "    return a + b\n"},
    {"task_id": "toy/add", "sample_id": "off-by-one", "completion": "    return a + b + (a > 5)\n"},
    {"task_id": "toy/add", "sample_id": "raises", "completion": "    return a / 0\n"},
    {"task_id": "toy/add", "sample_id": "loops", "completion": "    while True:\n        pass\n"},
    {
        "task_id": "toy/halve",
        "sample_id": "0",
        "completion": "```python\ndef halve(x):\n    return x / 2\n```",
    },
    {"task_id": "toy/halve", "sample_id": "1", "completion": "    return x // 2\n"},
]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def read_results(out: Path) -> dict[tuple[str, str], dict]:
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    return {(r["task_id"], r["sample_id"]): r for r in rows}


@pytest.fixture
def toy(pytester: pytest.Pytester) -> dict[str, Path]:
    return {
        "suite": write_jsonl(pytester.path / "problems.jsonl", PROBLEMS),
        "samples": write_jsonl(pytester.path / "samples.jsonl", SAMPLES),
        "out": pytester.path / "out",
    }


def run(pytester: pytest.Pytester, toy: dict[str, Path], *extra: str) -> pytest.RunResult:
    return pytester.runpytest(
        "--llm-eval", f"jsonl:{toy['suite']}", "--llm-samples", str(toy["samples"]),
        "--llm-out", str(toy["out"]), "--llm-timeout", "1", "-p", "no:codeeval_gate", *extra,
    )  # fmt: skip


def test_verdicts_per_sample_and_case(pytester: pytest.Pytester, toy: dict[str, Path]) -> None:
    result = run(pytester, toy)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    rows = read_results(toy["out"])
    assert rows["toy/add", "right"]["status"] == "passed"
    off = rows["toy/add", "off-by-one"]
    assert off["status"] == "failed"
    assert [c["status"] for c in off["cases"]] == ["passed", "passed", "failed"]
    assert "assert 16 == 15" in off["cases"][2]["message"]
    raised = rows["toy/add", "raises"]
    assert raised["status"] == "failed" and "ZeroDivisionError" in raised["cases"][0]["message"]
    assert rows["toy/add", "loops"]["status"] == "timeout"
    assert rows["toy/halve", "0"]["status"] == "passed"
    assert rows["toy/halve", "0"]["completion_kind"] == "markdown"
    assert rows["toy/halve", "1"]["status"] == "failed"
    for row in rows.values():
        assert set(row) >= {
            "suite",
            "task_id",
            "sample_id",
            "status",
            "passed",
            "cases",
            "completion",
            "raw",
            "duration_s",
        }
    summary = json.loads((toy["out"] / "summary.json").read_text())
    entry = (
        summary["suites"]["toy"]
        if "toy" in summary["suites"]
        else next(iter(summary["suites"].values()))
    )
    assert entry["samples"] == 6 and entry["passed"] == 2 and entry["timeout"] == 1
    # pass@1 over problems: add has 1/4 right, halve 1/2; pass@10 is not reportable (n < 10).
    assert entry["pass@1"] == pytest.approx((1 / 4 + 1 / 2) / 2)
    assert "pass@10" not in entry
    result.stdout.fnmatch_lines(["*codeeval summary*", "*pass@1*"])


def test_generated_suite_reruns_with_plain_pytest(
    pytester: pytest.Pytester, toy: dict[str, Path]
) -> None:
    run(pytester, toy)
    suite_dir = toy["out"] / "suite"
    files = sorted(p.name for p in suite_dir.glob("*/test_*.py"))
    assert files == ["test_toy_add.py", "test_toy_halve.py"]
    rerun = pytester.runpytest(str(suite_dir), "-p", "no:codeeval_gate")
    outcomes = rerun.parseoutcomes()
    # One item per sample: add has 4 samples, halve 2; as in the first run.
    assert outcomes["passed"] + outcomes["failed"] == 6
    assert outcomes["failed"] == 4
    rerun.stdout.fnmatch_lines(["*case_2 failed: assert 16 == 15*"])
    per_case = pytester.runpytest(str(suite_dir), "-p", "no:codeeval_gate", "--llm-per-case")
    outcomes = per_case.parseoutcomes()
    # add: 4 samples x 3 cases; halve: 2 samples x 2 cases.
    assert outcomes["passed"] + outcomes["failed"] == 16
    assert outcomes["failed"] == 8


def test_per_case_items_give_the_same_rows(pytester: pytest.Pytester, toy: dict[str, Path]) -> None:
    run(pytester, toy)
    per_sample = read_results(toy["out"])
    run(pytester, toy, "--llm-per-case")
    per_case = read_results(toy["out"])
    assert per_sample.keys() == per_case.keys()
    for key, row in per_sample.items():
        other = per_case[key]
        assert row["status"] == other["status"], key
        assert [(c["case_id"], c["status"], c["message"]) for c in row["cases"]] == [
            (c["case_id"], c["status"], c["message"]) for c in other["cases"]
        ], key


def test_runs_from_a_users_project_with_xdist_and_junit(
    pytester: pytest.Pytester, toy: dict[str, Path]
) -> None:
    pytester.makepyfile(test_users_own="def test_unrelated():\n    assert False\n")
    pytester.makeini("[pytest]\npython_files = check_*.py\n")
    result = run(pytester, toy, "-n", "2", "--junitxml", str(pytester.path / "junit.xml"))
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    rows = read_results(toy["out"])
    assert len(rows) == 6 and rows["toy/add", "right"]["status"] == "passed"
    assert rows["toy/add", "loops"]["status"] == "timeout"
    junit = (pytester.path / "junit.xml").read_text()
    assert 'name="sample[right]"' in junit and "test_unrelated" not in junit


def test_all_passing_run_exits_zero(pytester: pytest.Pytester, toy: dict[str, Path]) -> None:
    result = pytester.runpytest(
        "--llm-eval", f"jsonl:{toy['suite']}", "--llm-samples", "canonical",
        "--llm-out", str(toy["out"]), "-p", "no:codeeval_gate",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.OK
    assert all(r["passed"] for r in read_results(toy["out"]).values())


def test_bad_sample_lines_are_reported_and_the_rest_evaluated(
    pytester: pytest.Pytester, toy: dict[str, Path]
) -> None:
    toy["samples"].write_bytes(
        b'{"task_id": "toy/add", "completion": "    return a + b\\n"}\n'
        b"{not json\n"
        b'{"task_id": "toy/nope", "completion": "x"}\n'
        b'{"task_id": "toy/add"}\n'
        b'{"task_id": "toy/add", "completion": ""}\n'
        b'{"task_id": "toy/halve", "completion": "    return x / 2  # \xff\xfe\\n"}\n'
        + b'{"task_id": "toy/halve", "completion": "'
        + b"#" * 1_000_000
        + b'"}\n'
    )
    result = run(pytester, toy)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    text = result.stdout.str()
    for line in (2, 3, 4, 6):  # bad JSON, unknown task, no completion, not UTF-8
        assert f"samples.jsonl:{line}:" in text
    rows = read_results(toy["out"])
    assert rows["toy/add", "0"]["status"] == "passed"
    assert rows["toy/add", "1"]["status"] == "failed"  # the empty completion
    assert rows["toy/halve", "0"]["status"] == "failed"  # the 1 MB completion got a verdict
    summary = json.loads((toy["out"] / "summary.json").read_text())
    assert len(summary["input_errors"]) >= 3


def test_unknown_suite_is_a_usage_error_listing_known_ones(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--llm-eval", "nosuch", "--llm-samples", "canonical")
    assert result.ret != pytest.ExitCode.OK
    assert "humaneval" in result.stderr.str() + result.stdout.str()


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["--llm-eval", "jsonl:/no/such/problems.jsonl", "--llm-samples", "canonical"],
            "*--llm-eval jsonl:/no/such*",
        ),
        (
            ["--llm-eval", "humaneval", "--llm-split", "tset[:3", "--llm-samples", "canonical"],
            "*malformed split*",
        ),
        (
            ["--llm-eval", "humaneval", "--llm-samples", "/no/such.jsonl"],
            "*--llm-samples /no/such.jsonl: no such file*",
        ),
    ],
)
def test_bad_arguments_are_usage_errors_not_tracebacks(
    pytester: pytest.Pytester, args: list[str], message: str
) -> None:
    result = pytester.runpytest(*args, "-p", "no:codeeval_gate")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message}"])
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


def test_terminal_shows_the_table_not_a_line_per_failed_case(
    pytester: pytest.Pytester, toy: dict[str, Path]
) -> None:
    quiet = run(pytester, toy)
    text = quiet.stdout.str()
    assert "short test summary info" not in text and "FAILURES" not in text
    assert "FAILED" not in text and "per-case failure messages: results.jsonl" in text
    quiet.stdout.fnmatch_lines(["*codeeval summary*", "*failed*passed*"])
    # Asking for them brings them back, as in any pytest run.
    loud = run(pytester, toy, "--tb=line", "-rf")
    loud.stdout.fnmatch_lines(["*short test summary info*", "FAILED *test_toy_add.py::*"])
    assert "assert 16 == 15" in loud.stdout.str()


def test_xdist_workers_give_the_same_rows_as_one_process(
    pytester: pytest.Pytester, toy: dict[str, Path]
) -> None:
    # Reports of generated tests travel packed (plugin.reports): nothing may be lost on the way.
    run(pytester, toy)
    here = read_results(toy["out"])
    run(pytester, toy, "-n", "2")
    workers = read_results(toy["out"])

    def verdicts(rows: dict) -> dict:
        return {
            key: (row["status"], [(c["case_id"], c["status"], c["message"]) for c in row["cases"]])
            for key, row in rows.items()
        }

    assert verdicts(here) == verdicts(workers)
    assert all(row["execution"].get("stdout") is not None for row in workers.values())


@pytest.mark.bwrap
def test_a_broken_sandbox_stops_the_session_with_one_message(pytester: pytest.Pytester) -> None:
    # Bubblewrap is present but cannot start the server (the interpreter is hidden from it):
    # one usage error that says why and what to do, not a column of infrastructure errors.
    from harness.sandbox import bwrap_available

    if not bwrap_available():
        pytest.skip("bubblewrap is not usable here")
    import os
    import sys

    out = pytester.path / "out"
    result = pytester.runpytest_subprocess(
        "--llm-eval", "humaneval", "--llm-split", "test[:2]", "--llm-samples", "canonical",
        "--llm-data-dir", os.path.realpath(sys.executable), "--llm-out", str(out),
        "-p", "no:codeeval_gate",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if "bubblewrap" in line]
    assert len(errors) == 1 and "CODEEVAL_SANDBOX=nobwrap" in errors[0], result.stderr.str()
    assert not (out / "results.jsonl").exists()


def test_other_projects_run_with_codeeval_disabled(pytester: pytest.Pytester) -> None:
    # `-p no:codeeval` leaves the generation and gate plugins loaded: under xdist a worker
    # must not reject their hooks for want of codeeval's hook specs.
    pytester.makepyfile("def test_one():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:codeeval", "-n", "2", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_a_packed_report_comes_back_as_pytests_own_path_gives_it() -> None:
    # Under xdist a generated test's report travels as JSON (plugin.reports); its tuples must
    # come back as tuples, as execnet delivers them (pytest's -rs asserts a skip's is one).
    from plugin.reports import pytest_report_from_serializable, pytest_report_to_serializable

    report = pytest.TestReport(
        "out/suite/problems/test_toy_add.py::sample[raises]",
        ("out/suite/problems/test_toy_add.py", 0, "sample[raises]"),
        {"llm_task": 1, "sample[raises]": 1},
        "skipped",
        ("out/suite/problems/test_toy_add.py", 1, "Skipped: not today"),
        "setup",
        sections=[("Captured stdout setup", "hello")],
        user_properties=[("case", "c0")],
    )
    data = pytest_report_to_serializable(config=None, report=report)  # type: ignore[arg-type]
    assert data is not None and set(data) == {"codeeval_packed_report"}
    back = pytest_report_from_serializable(config=None, data={**data, "worker_id": "gw0"})  # type: ignore[arg-type]
    for field in ("nodeid", "location", "outcome", "longrepr", "when", "sections"):
        assert getattr(back, field) == getattr(report, field), field
    assert back.user_properties == report.user_properties
    assert back.worker_id == "gw0"  # what xdist adds beside the packed report
