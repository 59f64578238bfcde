"""A candidate's lone surrogates never cost the run its report.

Undecodable output and strings like ``"\\udc80"`` in an exception message reach the rows as
lone surrogates, which strict UTF-8 cannot encode. Every page (the run's report, the A/B
comparison, ``codeeval report``) is still written, is valid UTF-8, and shows each such
character as a visible escape.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.cli import main as cli_main
from harness.report import load_out_dir, write_compare, write_report
from harness.report.training import TrainingRun, write_training_report

MESSAGE = "ValueError: bad \udc80 byte \ud800x\udfff"
STDOUT = "out \udcff\udcfe tail"


def _write_run(out: Path) -> Path:
    """An out dir whose failed rows carry lone surrogates in message, stdout and stderr."""
    out.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    for i in range(4):
        ok = i % 2 == 0
        rows.append(
            {
                "suite": "humaneval",
                "task_id": f"HumanEval/{i}",
                "sample_id": "0",
                "status": "passed" if ok else "failed",
                "passed": ok,
                "error_kind": None,
                "cases": [
                    {
                        "case_id": "c0",
                        "status": "passed" if ok else "failed",
                        "message": "" if ok else MESSAGE,
                        "weaker": False,
                        "duration_s": 0.01,
                    }
                ],
                "execution": {"stdout": STDOUT, "stderr": MESSAGE},
            }
        )
    # json.dumps escapes the surrogates (\udc80), as the harness's own rows do.
    (out / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    summary = {
        "suites": {
            "humaneval": {
                "problems": 4,
                "samples": 4,
                "passed": 2,
                "failed": 2,
                "timeout": 0,
                "errors": 0,
                "data_errors": 0,
                "pass@1": 0.5,
            }
        },
        "settings": {"suites": ["humaneval"], "k": [1], "model": "tiny", "split": None},
    }
    (out / "summary.json").write_text(json.dumps(summary))
    return out


def _page(path: Path) -> str:
    data = path.read_bytes()
    assert data, f"{path} is empty"
    return data.decode("utf-8")  # strict: valid UTF-8


def test_the_report_is_written_with_the_surrogates_escaped(tmp_path: Path) -> None:
    run = load_out_dir(_write_run(tmp_path / "out"))
    assert MESSAGE in [case["message"] for row in run.rows for case in row["cases"]]
    page = _page(write_report(run, tmp_path / "report.html"))
    assert "\\udc80" in page
    assert "</html>" in page


def test_codeeval_report_writes_it(tmp_path: Path, capsys: Any) -> None:
    out = _write_run(tmp_path / "out")
    assert cli_main(["--history", str(tmp_path / "h.sqlite"), "report", str(out)]) == 0
    page = _page(out / "report.html")
    assert "\\udc80" in page
    assert str(out / "report.html") in capsys.readouterr().out


def test_the_comparison_is_written(tmp_path: Path) -> None:
    a = load_out_dir(_write_run(tmp_path / "a"))
    b = load_out_dir(_write_run(tmp_path / "b"))
    page = _page(write_compare(a, b, tmp_path / "compare.html"))
    assert "</html>" in page


def test_a_training_page_is_written(tmp_path: Path) -> None:
    run = TrainingRun(folder=tmp_path / "run\udc80", records=[{"step": 1, "loss": 0.5}])
    page = _page(write_training_report(run, tmp_path / "training.html"))
    assert "\\udc80" in page
