"""Results broken down by language and suite: summary.json, the SQLite history (with its
migration from schema 2), the report page, `codeeval history --language`, and a real pytest
session over a Python and a JavaScript suite."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from harness.history import History
from harness.pipeline.results import summarize
from harness.report import write_report
from harness.report.rundata import load_history_run, load_out_dir


def row(suite: str, task: str, sample: str, status: str, **extra: Any) -> dict[str, Any]:
    return {
        "suite": suite, "task_id": task, "sample_id": sample, "status": status,
        "passed": status == "passed", "error_kind": "data" if status == "error" else None,
        "cases": [], "execution": {"notes": ["data defect: x"] if status == "error" else []},
        **extra,
    }  # fmt: skip


ROWS = [
    row("humaneval", "HumanEval/0", "0", "passed", language="python"),
    row("humaneval", "HumanEval/0", "1", "failed", language="python"),
    row("humaneval-js", "js/HumanEval/0", "0", "passed", language="js"),
    row("humaneval-js", "js/HumanEval/0", "1", "passed", language="js"),
    row("mbpp-sanitized-js", "js/Mbpp/2", "0", "failed", language="js"),
    row("mbpp-sanitized-js", "js/Mbpp/2", "1", "timeout", language="js"),
    # no `language` key: a row written before rows named theirs; its suite's name tells
    row("humaneval-rs", "rs/HumanEval/0", "0", "error"),
    row("humaneval-rs", "rs/HumanEval/0", "1", "error"),
]


def test_summary_pools_a_languages_suites() -> None:
    summary = summarize(ROWS, [1, 2], {})
    assert summary["suites"]["humaneval-js"]["language"] == "js"
    assert summary["suites"]["humaneval-rs"]["language"] == "rs"
    js = summary["languages"]["js"]
    assert js["suites"] == ["humaneval-js", "mbpp-sanitized-js"]
    assert (js["problems"], js["samples"], js["passed"], js["failed"], js["timeout"]) == (
        2, 4, 2, 1, 1,
    )  # fmt: skip
    assert js["pass@1"] == 0.5 and js["pass@2"] == 0.5  # one problem always, one never
    assert summary["languages"]["python"]["pass@1"] == 0.5
    rs = summary["languages"]["rs"]
    assert rs["data_errors"] == 2 and "pass@1" not in rs  # nothing could be judged
    # A problem is (suite, task id): the same task id in two suites is two problems.
    twins = [row("a-js", "T", "0", "passed"), row("b-js", "T", "0", "failed")]
    assert summarize(twins, [1], {})["languages"]["js"]["problems"] == 2


def test_history_stores_and_breaks_down_by_language(tmp_path: Path) -> None:
    db = History(tmp_path / "h.sqlite")
    summary = summarize(ROWS, [1], {})
    run_id = db.record(summary=summary, rows=ROWS, model="m")
    other = db.record(summary=summarize(ROWS[:2], [1], {}), rows=ROWS[:2], model="m")
    assert [r.id for r in db.runs(language="js")] == [run_id]
    assert [r.id for r in db.runs(language="python")] == [other, run_id]
    assert db.get(run_id).suites["mbpp-sanitized-js"]["language"] == "js"  # type: ignore[union-attr]
    parts = db.breakdown(run_id)
    assert parts["languages"] == summary["languages"]
    assert parts["suites"] == summary["suites"]
    assert {r["language"] for r in db.rows(run_id)} == {"python", "js", "rs"}


V2_SCHEMA = """
CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, created_at TEXT NOT NULL,
    model TEXT NOT NULL DEFAULT '', split TEXT NOT NULL DEFAULT '',
    code_version TEXT NOT NULL DEFAULT '', out_dir TEXT NOT NULL DEFAULT '',
    settings TEXT NOT NULL DEFAULT '{}', summary TEXT NOT NULL DEFAULT '{}');
CREATE TABLE run_suites (run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    suite TEXT NOT NULL, problems INTEGER NOT NULL DEFAULT 0, samples INTEGER NOT NULL DEFAULT 0,
    passed INTEGER NOT NULL DEFAULT 0, pass_at TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (run_id, suite));
CREATE TABLE samples (run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    suite TEXT NOT NULL, task_id TEXT NOT NULL, sample_id TEXT NOT NULL, status TEXT NOT NULL,
    passed INTEGER NOT NULL, error_kind TEXT, agent TEXT, reward REAL, reward_parts TEXT,
    prompt TEXT, completion TEXT);
INSERT INTO runs (id, created_at, model) VALUES (1, '2024-01-01T00:00:00+00:00', 'm');
INSERT INTO run_suites VALUES (1, 'humaneval-cpp', 1, 1, 1, '{"pass@1": 1.0}');
INSERT INTO samples VALUES (1, 'humaneval-cpp', 'cpp/HumanEval/0', '0', 'passed', 1, NULL,
    NULL, NULL, NULL, NULL, NULL);
PRAGMA user_version = 2;
"""


def test_a_schema_2_history_is_migrated_and_its_languages_inferred(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    con = sqlite3.connect(path)
    con.executescript(V2_SCHEMA)
    con.close()
    db = History(path)
    assert db.get(1).suites["humaneval-cpp"]["language"] == "cpp"  # type: ignore[union-attr]
    assert db.breakdown(1)["languages"]["cpp"]["pass@1"] == 1.0
    assert [r.id for r in db.runs(language="cpp")] == []  # old rows: NULL in the column
    new = db.record(summary=summarize(ROWS, [1], {}), rows=ROWS, model="m")
    assert [r.id for r in db.runs(language="rs")] == [new]
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA user_version").fetchone() == (3,)
    con.close()


def test_report_and_cli_show_languages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CODEEVAL_HISTORY", str(tmp_path / "h.sqlite"))
    scored = [
        {**r, "reward": 0.5, "reward_parts": {"tests": 0.5}}
        | ({"reward_missing": {"quality": "no js analyzer"}} if r.get("language") == "js" else {})
        for r in ROWS
    ]
    db = History()
    run_id = db.record(summary=summarize(scored, [1], {}), rows=scored, model="m")
    # From the history (the summary's languages) and from an out dir without them.
    page = write_report(load_history_run(run_id, db), tmp_path / "a.html").read_text()
    assert "By language" in page and "humaneval-js, mbpp-sanitized-js" in page
    assert "Mean reward and parts by language and suite" in page
    assert "Parts named missing" in page and "quality" in page
    out = tmp_path / "out"
    out.mkdir()
    old_rows = [{k: v for k, v in r.items() if k != "language"} for r in ROWS[:6]]
    old_summary = summarize(old_rows, [1], {})
    del old_summary["languages"]
    (out / "summary.json").write_text(json.dumps(old_summary))
    (out / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in old_rows))
    page = write_report(load_out_dir(str(out)), tmp_path / "b.html").read_text()
    assert "By language" in page and "<td>js</td>" in page
    assert main(["history", "--language", "js"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["id", "recorded", "model", "suite", "language", "pass@1", "code"]
    assert {line.split()[3] for line in lines[1:]} == {"humaneval-js", "mbpp-sanitized-js"}


PROBLEM = {
    "task_id": "Toy/add",
    "prompt": 'def add(a, b):\n    """Return a + b."""\n',
    "entry_point": "add",
    "canonical_solution": "    return a + b\n",
    "test": "def check(candidate):\n    assert candidate(1, 2) == 3\n",
}


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_a_real_run_over_two_languages(pytester: pytest.Pytester, tmp_path: Path) -> None:
    suite = pytester.path / "problems.jsonl"
    suite.write_text(json.dumps(PROBLEM) + "\n")
    fixture = Path(__file__).parent / "fixtures" / "languages" / "samples.jsonl"
    js = [
        r
        for r in map(json.loads, fixture.open())
        if r["task_id"] == "js/HumanEval/0" and r["sample_id"] in ("fixture", "wrong")
    ]
    samples = pytester.path / "samples.jsonl"
    python = [{"task_id": "Toy/add", "sample_id": "0", "completion": "    return a + b\n"}]
    samples.write_text("".join(json.dumps(r) + "\n" for r in [*python, *js]))
    out = pytester.path / "out"
    result = pytester.runpytest(
        "--llm-eval", f"jsonl:{suite},humaneval-js", "--llm-samples", str(samples),
        "--llm-out", str(out), "--llm-timeout", "5",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # the wrong JavaScript variant
    rows = [json.loads(line) for line in (out / "results.jsonl").open()]
    assert {(r["language"], r["status"]) for r in rows} == {
        ("python", "passed"), ("js", "passed"), ("js", "failed"),
    }  # fmt: skip
    summary = json.loads((out / "summary.json").read_text())
    assert summary["languages"]["js"]["pass@1"] == 0.5
    assert summary["languages"]["python"]["suites"] == [f"jsonl:{suite}"]
    result.stdout.fnmatch_lines(["[[]js[]] * 1 * 2 * 1 * 1 *0.500"])
    db = History()
    breakdown = db.breakdown(summary["history"]["run_id"])
    assert breakdown["languages"] == summary["languages"]
    assert "By language" in (out / "report.html").read_text()
