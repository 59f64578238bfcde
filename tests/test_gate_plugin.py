"""The CI gate end to end: real pytest sessions (pytester) over a tiny JSONL suite."""

from __future__ import annotations

import json

import pytest

# pytester's in-process runs drop modules first imported inside them, and numpy cannot be
# imported twice in one process: import what the gate and the reports use up front.
import harness.gate  # noqa: F401
import harness.report  # noqa: F401
from harness.history import History

pytest_plugins = ["pytester"]

N = 10  # problems in the tiny suite
SUITE = "jsonl:problems.jsonl"


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A 10-problem HumanEval-shaped suite in the pytester folder, and a private history."""
    monkeypatch.setenv("CODEEVAL_HISTORY", str(pytester.path / "history.sqlite"))
    problems = [
        {
            "task_id": f"T/{i}",
            "prompt": f'def add{i}(x):\n    """Return x + {i}."""\n',
            "entry_point": f"add{i}",
            "test": f"def check(candidate):\n    assert candidate(1) == {1 + i}\n",
            "canonical_solution": f"    return x + {i}\n",
        }
        for i in range(N)
    ]
    pytester.makefile(".jsonl", problems="\n".join(json.dumps(p) for p in problems))
    return pytester


def samples(pytester: pytest.Pytester, name: str, broken: int) -> str:
    """A samples file whose first ``broken`` completions are wrong."""
    rows = [
        {
            "task_id": f"T/{i}",
            "completion": "    return 0\n" if i < broken else f"    return x + {i}\n",
        }
        for i in range(N)
    ]
    pytester.makefile(".jsonl", **{name: "\n".join(json.dumps(r) for r in rows)})
    return f"{name}.jsonl"


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("-p", "no:cacheprovider", "--llm-eval", SUITE, *args)


def test_a_better_baseline_fails_the_session_and_names_the_regressions(
    suite: pytest.Pytester,
) -> None:
    good = run(suite, "--llm-samples", samples(suite, "good", 0), "--llm-out", "base")
    assert good.ret == 0
    assert (suite.path / "base" / "report.html").exists()
    good.stdout.fnmatch_lines(
        ["history: recorded as run 1 in *history.sqlite", "report: *base*report.html"]
    )
    result = run(
        suite,
        "--llm-samples",
        samples(suite, "bad", 6),
        "--llm-out",
        "now",
        "--llm-baseline",
        "base/summary.json",
        "--llm-max-drop",
        "0.02",
        "-n",
        "2",
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*codeeval gate*",
            f"{SUITE}: pass@1 0.4000 (baseline 1.0000 on 10 common problems, drop +0.6000*FAILED",
            "*exact McNemar*p=0.0156* -> significant",
            "  pass->fail (6): T/0, T/1, T/2, T/3, T/4, T/5",
            "gate: FAILED",
            "report: *now*report.html",
        ]
    )
    result.assert_outcomes(failed=6, passed=4)  # failed samples still show as failed tests
    summary = json.loads((suite.path / "now" / "summary.json").read_text())
    assert summary["gate"]["passed"] is False
    assert summary["gate"]["suites"][SUITE]["regressed"][0]["task_id"] == "T/0"
    assert summary["history"]["run_id"] == 2


def write_baseline(pytester: pytest.Pytester, folder: str, passed: int) -> None:
    """A baseline as an earlier run leaves it: summary.json with results.jsonl beside it."""
    out = pytester.path / folder
    out.mkdir()
    rows = [
        {
            "suite": SUITE,
            "task_id": f"T/{i}",
            "sample_id": "0",
            "status": "passed" if i < passed else "failed",
            "passed": i < passed,
        }
        for i in range(N)
    ]
    (out / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    stats = {"problems": N, "samples": N, "passed": passed, "pass@1": passed / N}
    (out / "summary.json").write_text(json.dumps({"suites": {SUITE: stats}, "settings": {}}))


def test_a_small_drop_within_noise_passes(suite: pytest.Pytester) -> None:
    write_baseline(suite, "base", passed=N)
    result = run(
        suite,
        "--llm-samples",
        samples(suite, "slightly", 2),
        "--llm-out",
        "now",
        "--llm-baseline",
        "base",
    )
    assert result.ret == pytest.ExitCode.OK  # although two samples failed
    result.assert_outcomes(failed=2, passed=8)
    result.stdout.fnmatch_lines(["*p=0.25 at confidence 0.95 -> within noise", "gate: passed"])


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "*bad baseline: *missing*summary.json: no such file"),
        ("{oops", "*bad baseline: *summary.json:1: column 2: not valid JSON*"),
        ('{"settings": {}}', "*bad baseline: *summary.json: field 'suites' is missing*"),
        ('{"suites": {"x": {}}}', "*summary.json: field 'suites.x.pass@1' is missing, *"),
    ],
)
def test_bad_baseline_files_are_clear_usage_errors(
    suite: pytest.Pytester, content: str | None, message: str
) -> None:
    (suite.path / "missing").mkdir()
    if content is not None:
        (suite.path / "missing" / "summary.json").write_text(content)
    result = run(suite, "--llm-samples", "canonical", "--llm-baseline", "missing")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: --llm-baseline{message}"])
    assert not (suite.path / "codeeval-out").exists()  # refused before any work


def test_a_baseline_of_another_suite_is_an_error(suite: pytest.Pytester) -> None:
    other = suite.path / "other"
    other.mkdir()
    (other / "summary.json").write_text(json.dumps({"suites": {"humaneval": {"pass@1": 0.5}}}))
    (other / "results.jsonl").write_text('{"task_id": "HumanEval/0", "status": "passed"}\n')
    result = run(suite, "--llm-samples", "canonical", "--llm-baseline", "other/summary.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(
        [
            f"error: --llm-baseline: bad baseline: *other*summary.json: field 'suites' has no '{SUITE}'*"
        ]
    )


def test_history_baseline_floor_and_no_history(suite: pytest.Pytester) -> None:
    first = run(suite, "--llm-samples", "canonical", "--llm-baseline", "history")
    assert first.ret == 0
    first.stdout.fnmatch_lines(["note: no earlier run of model*this run becomes the baseline"])
    result = run(
        suite,
        "--llm-samples",
        samples(suite, "bad", 7),
        "--llm-baseline",
        "history",
        "--llm-fail-under",
        "0.5",
        "--llm-no-history",
        "--llm-out",
        "now",
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "baseline: *history.sqlite#1",
            "*floor 0.5000 -- FAILED",
            "*pass->fail (7): T/0,*",
            "*reason: pass@1 0.3000 is below the floor 0.5000",
            "*reason: pass@1 dropped by 0.7000*",
        ]
    )
    runs = History().runs()
    assert [r.pass_at(SUITE) for r in runs] == [1.0]  # the --llm-no-history run is absent
    page = (suite.path / "now" / "report.html").read_text()
    assert "CI gate" in page and "History" in page


def test_bad_gate_options(suite: pytest.Pytester) -> None:
    result = run(suite, "--llm-samples", "canonical", "--llm-confidence", "1.5")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --llm-confidence must be in (0, 1), got 1.5"])
