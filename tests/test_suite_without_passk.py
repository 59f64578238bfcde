"""A run in which a whole suite is data errors has no pass@k for it: real pytest sessions
(pytester, a fresh process each, so the sandbox sees this test's dependency overlays) over a
JSONL suite whose problems all need an overlay that is fetched in one run and not in another
(docs/dependencies.md); then the report, the history, compare and the CI gate on those runs."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main as codeeval
from harness.deps.overlay import ROOT_ENV
from harness.gate import ProblemResult, compare_suite, format_verdict
from harness.history import History
from harness.report import load_out_dir
from tests.test_deps_sources import TINY, lay_out

pytest_plugins = ["pytester"]

N = 3  # problems; the samples pass the first two
MODULES = {"tinylib": "VALUE = 'one'\n"}


def record(i: int) -> dict[str, Any]:
    """A problem whose reference and tests need tinylib (the problem's own allow-list)."""
    return {
        "task_id": f"Toy/{i}",
        "prompt": f'def tag{i}(n):\n    """tinylib\'s VALUE, a dash, n + {i}."""\n',
        "entry_point": f"tag{i}",
        "canonical_solution": f"    import tinylib\n    return f'{{tinylib.VALUE}}-{{n + {i}}}'\n",
        "test": f"def check(candidate):\n    assert candidate(3) == 'one-{3 + i}'\n",
        "dependencies": TINY,
    }


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The suite, the samples and an empty overlay root (under the shared /tmp: without
    bubblewrap the sandbox's child reads an overlay where it lies); a private history."""
    root = Path(tempfile.mkdtemp(prefix="codeeval-test-nopassk-"))
    monkeypatch.setenv(ROOT_ENV, str(root))
    monkeypatch.setenv("CODEEVAL_CACHE", str(pytester.path / "cache"))
    monkeypatch.setenv("CODEEVAL_HISTORY", str(pytester.path / "history.sqlite"))
    (pytester.path / "problems.jsonl").write_text(
        "".join(json.dumps(record(i)) + "\n" for i in range(N))
    )
    samples = [
        {"task_id": f"Toy/{i}", "completion": "    return 'wrong'\n" if i == N - 1 else
         f"    import tinylib\n    return f'{{tinylib.VALUE}}-{{n + {i}}}'\n"}
        for i in range(N)
    ]  # fmt: skip
    (pytester.path / "samples.jsonl").write_text("".join(json.dumps(s) + "\n" for s in samples))
    yield root
    shutil.rmtree(root, ignore_errors=True)


def session(pytester: pytest.Pytester, out: str, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--llm-eval", "jsonl:problems.jsonl",
        "--llm-samples", "samples.jsonl", "--llm-out", out, *args,
    )  # fmt: skip


def no_crash(result: pytest.RunResult) -> None:
    text = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in text and "INTERNALERROR" not in text, text[-3000:]


def test_a_suite_of_only_data_errors_loads_renders_and_gates(
    pytester: pytest.Pytester, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = "jsonl:problems.jsonl"
    # 1. Nothing fetched: every problem is a data error, and the suite has no pass@k.
    errors = session(pytester, "errors")
    no_crash(errors)
    summary = json.loads((pytester.path / "errors" / "summary.json").read_text())
    entry = summary["suites"][suite]
    assert (entry["samples"], entry["data_errors"], entry["passed"]) == (N, N, 0)
    assert not [k for k in entry if k.startswith("pass@")]
    assert {(d["suite"], d["task_id"]) for d in summary["data_errors"]} == {
        (suite, f"Toy/{i}") for i in range(N)
    }
    run = load_out_dir(pytester.path / "errors")  # refused before: no pass@1
    assert run.suites == [suite]
    assert codeeval(["report", str(pytester.path / "errors")]) == 0
    page = (pytester.path / "errors" / "report.html").read_text()
    assert "<th>data_errors</th>" in page and "<td>n/a</td>" in page
    assert f"No pass@k for {suite}" in page
    assert "codeeval deps fetch jsonl:problems.jsonl" in page  # the data errors' reasons

    # 2. Fetched: judged, gated against the run without pass@k, which cannot regress.
    lay_out(project, TINY, MODULES)
    good = session(pytester, "good", "--llm-baseline", "errors")
    no_crash(good)
    assert good.ret == pytest.ExitCode.OK  # one wrong sample, but the gate decides
    good.stdout.fnmatch_lines(
        [
            f"{suite}: pass@1 0.6667 -- OK",
            f"  {N} problem(s) only in this run (not compared)",
            "  note: the baseline judged no sample of this suite (all ended in errors)*"
            "nothing can regress from it; not compared",
            "gate: passed",
        ]
    )

    # 3. The overlay gone again: the suite lost its pass@k against a baseline that had one.
    shutil.rmtree(project)
    project.mkdir()
    lost = session(pytester, "lost", "--llm-baseline", "good")
    no_crash(lost)
    assert lost.ret == pytest.ExitCode.TESTS_FAILED
    lost.stdout.fnmatch_lines(
        [
            f"{suite}: pass@1 n/a (no sample judged) (baseline 0.6667, no problem compared)"
            " -- FAILED",
            f"  {N} problem(s) only in the baseline (not compared)",
            "  reason: no sample of this suite could be judged in this run (all ended in "
            f"errors), but the baseline judged {N} problem(s) at pass@1 0.6667*",
            "gate: FAILED",
        ]
    )
    gate = json.loads((pytester.path / "lost" / "summary.json").read_text())["gate"]
    assert gate["suites"][suite]["current_pass1"] is None and not gate["passed"]

    # 4. The history as the baseline (the latest run: no pass@k either) and a floor.
    floor = session(pytester, "floor", "--llm-baseline", "history", "--llm-fail-under", "0.5")
    no_crash(floor)
    assert floor.ret == pytest.ExitCode.TESTS_FAILED
    floor.stdout.fnmatch_lines(
        [
            "baseline: *history.sqlite#3",
            f"{suite}: pass@1 n/a (no sample judged), floor 0.5000 -- FAILED",
            "  note: the baseline judged no sample of this suite*",
            "  reason: no sample of this suite could be judged (all ended in errors), so the "
            "floor 0.5000 is not met",
        ]
    )

    # The history lists every run, pass@1 only where something was judged.
    history = History(pytester.path / "history.sqlite")
    runs = {r.id: r for r in history.runs()}
    passes = [runs[i].pass_at(suite) for i in (1, 2, 3, 4)]
    assert passes == [None, pytest.approx(2 / 3), None, None]
    assert [v for _, _, v in history.series(model="", suite=suite)] == [pytest.approx(2 / 3)]
    capsys.readouterr()
    assert codeeval(["history"]) == 0
    listed = [line.split() for line in capsys.readouterr().out.splitlines()[1:]]
    assert [(cells[0], cells[-2]) for cells in listed] == [
        ("4", "-"), ("3", "-"), ("2", "0.667"), ("1", "-"),
    ]  # fmt: skip
    # The report of a run without pass@k, with the history's points beside it, and one
    # loaded back from the history by its id.
    assert codeeval(["report", str(pytester.path / "floor")]) == 0
    page = (pytester.path / "floor" / "report.html").read_text()
    assert 'id="history"' in page and "<td>n/a</td>" in page and "gate FAILED" in page
    assert codeeval(["report", "history:3", "-o", str(pytester.path / "h3.html")]) == 0
    assert "<td>n/a</td>" in (pytester.path / "h3.html").read_text()
    # compare is no gate: the suite without pass@k is shown, with why nothing was compared.
    page_path = pytester.path / "compare.html"
    args = ["compare", str(pytester.path / "good"), str(pytester.path / "lost")]
    assert codeeval([*args, "-o", str(page_path)]) == 0
    out = capsys.readouterr().out
    assert f"{suite}: pass@1 n/a (no sample judged) (baseline 0.6667, no problem compared)" in out
    compare_page = page_path.read_text()
    assert "n/a (only errors)" in compare_page and "Not compared: no sample" in compare_page


def test_compare_suite_without_judged_problems() -> None:
    """The gate's choices on their own (the sessions above show them end to end)."""
    judged = {"T/0": ProblemResult(1, 1), "T/1": ProblemResult(0, 1)}
    # Nothing judged anywhere, no floor: nothing to compare, nothing failed.
    both = compare_suite("s", {}, {})
    assert both.passed and both.current_pass1 is None and both.baseline_pass1 is None
    assert "nothing can regress" in both.notes[0]
    # A baseline without pass@1 cannot regress: the run is not compared with it.
    new = compare_suite("s", judged, {})
    assert new.passed and new.current_pass1 == 0.5 and new.only_current == ["T/0", "T/1"]
    # The run lost what the baseline measured: a failure that says so.
    lost = compare_suite("s", {}, judged)
    assert not lost.passed and lost.baseline_pass1 == 0.5 and lost.compared == 0
    assert "baseline judged 2 problem(s) at pass@1 0.5000" in lost.reasons[0]
    # A floor with nothing measured is not met (without a baseline too).
    floor = compare_suite("s", {}, None, fail_under=0.0)
    assert not floor.passed and "floor 0.0000 is not met" in floor.reasons[0]
    assert format_verdict(floor)[0] == "s: pass@1 n/a (no sample judged), floor 0.0000 -- FAILED"
    assert json.loads(json.dumps(lost.to_json()))["current_pass1"] is None
