"""The ``codeeval`` command (harness/cli.py): report, compare and history."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from harness.cli import main
from harness.history import History


def write_run(out: Path, passes: list[bool], suite: str = "humaneval") -> Path:
    """A finished run's out dir: one sample per problem, ``passes[i]`` for problem i."""
    out.mkdir(parents=True)
    rows = [
        {
            "suite": suite,
            "task_id": f"HumanEval/{i}",
            "sample_id": "0",
            "status": "passed" if ok else "failed",
            "passed": ok,
            "error_kind": None,
            "cases": [],
        }
        for i, ok in enumerate(passes)
    ]
    (out / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    stats = {"problems": len(passes), "samples": len(passes), "passed": sum(passes)}
    stats["pass@1"] = sum(passes) / len(passes)
    (out / "summary.json").write_text(json.dumps({"suites": {suite: stats}, "settings": {}}))
    return out


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> History:
    monkeypatch.setenv("CODEEVAL_HISTORY", str(tmp_path / "history.sqlite"))
    return History()


def _console_script() -> str | None:
    """The ``codeeval`` script installed with the running interpreter (a venv's bin, which need
    not be on PATH: ``make test PYTHON=venv/bin/python``), else the first one on PATH."""
    for folder in (Path(sys.executable).parent, Path(sysconfig.get_path("scripts"))):
        script = folder / "codeeval"
        if script.is_file() and os.access(script, os.X_OK):
            return str(script)
    return shutil.which("codeeval")


def test_console_script_is_installed(tmp_path: Path) -> None:
    exe = _console_script() or pytest.fail("the codeeval console script is not installed")
    out = write_run(tmp_path / "run", [True, False, True])
    done = subprocess.run(
        [exe, "--history", str(tmp_path / "h.sqlite"), "report", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(out / "report.html")
    assert "<h2>pass@k</h2>" in (out / "report.html").read_text()
    help_text = subprocess.run(
        [sys.executable, "-m", "harness.cli", "--help"], capture_output=True, text=True, timeout=60
    ).stdout
    assert "report" in help_text and "compare" in help_text and "history" in help_text


def test_report_to_a_chosen_file(
    tmp_path: Path, db: History, capsys: pytest.CaptureFixture[str]
) -> None:
    out = write_run(tmp_path / "run", [True, False])
    assert main(["report", str(out), "-o", str(tmp_path / "pages" / "r.html")]) == 0
    assert (tmp_path / "pages" / "r.html").stat().st_size > 1000
    assert main(["report", str(tmp_path / "nowhere")]) == 2
    assert "codeeval report: error: " in capsys.readouterr().err


def test_compare_out_dirs_and_history_runs(
    tmp_path: Path, db: History, capsys: pytest.CaptureFixture[str]
) -> None:
    a = write_run(tmp_path / "a", [True] * 12)
    b = write_run(tmp_path / "b", [False] * 7 + [True] * 5)
    page = tmp_path / "cmp.html"
    assert main(["compare", str(a), str(b), "-o", str(page)]) == 0
    text = capsys.readouterr().out
    assert "pass->fail (7): HumanEval/0, HumanEval/1" in text
    assert "exact McNemar" in text and "p=0.00781" in text
    assert "HumanEval/6" in page.read_text()
    # The same two runs, from the history by id (and one side from a summary.json path).
    from harness.report import load_out_dir

    ids = [db.record(summary=r.summary, rows=r.rows) for r in map(load_out_dir, (a, b))]
    assert main(["compare", str(ids[0]), f"history:{ids[1]}", "-o", str(page)]) == 0
    assert "pass->fail (7)" in capsys.readouterr().out
    assert main(["compare", str(ids[0]), str(b / "summary.json"), "-o", str(page)]) == 0
    assert main(["compare", "77", str(b), "-o", str(page)]) == 2
    assert "no run with id 77" in capsys.readouterr().err


def test_history_listing(tmp_path: Path, db: History, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["history"]) == 0
    assert "no runs recorded yet" in capsys.readouterr().out
    summary = {"suites": {"humaneval": {"pass@1": 0.25}, "mbpp": {"pass@1": 0.5}}}
    db.record(summary=summary, rows=[], model="smollm2-135m", code_version="0.1.0 (git abc)")
    db.record(summary={"suites": {"mbpp": {"pass@1": 0.75}}}, rows=[], model="other", split="test")
    assert main(["history"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["id", "recorded", "model", "suite", "language", "pass@1", "code"]
    assert "other" in lines[1] and "mbpp[test]" in lines[1] and "0.750" in lines[1]
    assert "smollm2-135m" in lines[2] and "0.250" in lines[2] and "0.1.0 (git abc)" in lines[2]
    assert len(lines) == 4
    assert main(["history", "--model", "other", "--json"]) == 0
    listed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["model"] for r in listed] == ["other"] and listed[0]["suites"]["mbpp"][
        "pass@1"
    ] == 0.75
    assert main(["history", "--suite", "humaneval", "--limit", "1"]) == 0
    assert "smollm2-135m" in capsys.readouterr().out
