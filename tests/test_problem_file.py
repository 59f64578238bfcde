"""A compiled suite's problems are parsed when first asked for: a process that judges some of
the problems of a large suite (each worker of a run) parses those, not the whole file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.pipeline.judge import judge_suite
from harness.pipeline.problem_file import ProblemFile, ProblemFileError
from harness.pipeline.runtime import LoadedSuite, loaded_suite
from harness.records import CheckCase, Problem, Sample, problem_from_json, to_json

# Names with quotes, backslashes and non-ASCII letters: what a header must read back exactly.
names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=10)
problems = st.builds(
    Problem,
    suite=names,
    task_id=names,
    prompt=st.text(max_size=20),
    entry_point=st.just("f"),
    cases=st.lists(
        st.builds(CheckCase, case_id=names, source=st.text(max_size=20), mode=st.just("compare")),
        max_size=3,
    ).map(tuple),
    reference=st.text(max_size=20),
)


def _write(path: Path, rows: list[Problem], **dumps: object) -> None:
    path.write_text("".join(json.dumps(to_json(p), **dumps) + "\n" for p in rows))  # type: ignore[arg-type]


@settings(max_examples=80, deadline=None)
@given(st.lists(problems, max_size=6, unique_by=lambda p: p.task_id), st.booleans())
def test_it_reads_what_compile_wrote_parsing_only_what_is_asked(
    tmp_path_factory: pytest.TempPathFactory, rows: list[Problem], ascii_only: bool
) -> None:
    path = tmp_path_factory.mktemp("suite") / "problems.jsonl"
    _write(path, rows, ensure_ascii=ascii_only)
    loaded = ProblemFile(path)
    assert list(loaded) == [p.task_id for p in rows]
    assert dict(loaded.suites) == {p.task_id: p.suite for p in rows}
    assert loaded.parsed_count() == 0  # every line read as compile_suite writes it
    for count, problem in enumerate(reversed(rows), 1):
        assert loaded[problem.task_id] == problem
        assert loaded.parsed_count() == count
    assert "not a task" not in loaded and len(loaded) == len(rows)


@settings(max_examples=30, deadline=None)
@given(st.lists(problems, min_size=1, max_size=4, unique_by=lambda p: p.task_id))
def test_lines_written_otherwise_are_read_whole(
    tmp_path_factory: pytest.TempPathFactory, rows: list[Problem]
) -> None:
    path = tmp_path_factory.mktemp("suite") / "problems.jsonl"
    _write(path, rows, sort_keys=True, indent=None, separators=(",", ":"))
    loaded = ProblemFile(path)
    assert {t: loaded[t] for t in loaded} == {p.task_id: p for p in rows}


def test_a_bad_line_is_named_by_file_and_line(tmp_path: Path) -> None:
    good = Problem("s", "T/0", "", "f", (), "")
    path = tmp_path / "problems.jsonl"
    path.write_text(json.dumps(to_json(good)) + "\n[1, 2]\n")
    with pytest.raises(ProblemFileError, match=r"problems\.jsonl, line 2: not a problem"):
        ProblemFile(path)
    # A line that starts as a problem but is cut short fails when it is first asked for.
    path.write_text(json.dumps(to_json(good))[:40] + "\n")
    loaded = ProblemFile(path)
    with pytest.raises(ProblemFileError, match="line 1"):
        loaded["T/0"]


def test_a_file_written_again_while_in_use_is_an_error_not_another_problem(
    tmp_path: Path,
) -> None:
    first, second = (Problem("s", f"T/{i}", "", "f", (), "") for i in range(2))
    path = tmp_path / "problems.jsonl"
    _write(path, [first, second])
    loaded = ProblemFile(path)
    _write(path, [second, first])
    with pytest.raises(ProblemFileError, match="changed while it was in use"):
        loaded["T/0"]


def _problem(task_id: str) -> Problem:
    cases = tuple(
        CheckCase(f"c{i}", f"assert candidate({i}) == {i + 1}", "compare", calls=(f"f({i})",))
        for i in range(3)
    )
    return Problem("s", task_id, "def f(n):\n", "f", cases, "    return n + 1\n")


def test_a_process_judging_some_problems_parses_only_those(tmp_path: Path) -> None:
    from harness.evaluate import evaluate

    tasks = [f"T/{i}" for i in range(5)]
    samples = [Sample(t, "def f(n):\n    return n + 1\n", "s0") for t in tasks]
    # Judged in two worker processes: this one has not loaded the compiled suite yet.
    rows = evaluate([_problem(t) for t in tasks], samples, out_dir=tmp_path, workers=2)
    assert all(row["passed"] for row in rows)
    root = tmp_path / "suite"
    fresh = LoadedSuite(root)  # as a new worker opens it
    assert fresh.problems.parsed_count() == 0
    assert fresh.module_paths["T/3"].is_file()  # every module's path, nothing parsed
    assert fresh.problems.parsed_count() == 0
    judged = judge_suite(root, [("T/3", "s0")])  # the process's own loaded suite
    assert [row["passed"] for row in judged] == [True]
    assert loaded_suite(root).problems.parsed_count() == 1
    compiled = fresh.problems["T/3"]  # with its calibrated time limits
    assert (compiled.task_id, len(compiled.cases)) == ("T/3", 3)
    assert problem_from_json(to_json(compiled)) == compiled


@settings(max_examples=40, deadline=None)
@given(st.lists(problems, max_size=5, unique_by=lambda p: p.task_id))
def test_prompts_are_read_without_parsing_the_problems(
    tmp_path_factory: pytest.TempPathFactory, rows: list[Problem]
) -> None:
    path = tmp_path_factory.mktemp("suite") / "problems.jsonl"
    _write(path, rows)
    loaded = ProblemFile(path)
    assert {t: loaded.prompt_of(t) for t in loaded} == {p.task_id: p.prompt for p in rows}
    assert loaded.parsed_count() == 0


PROBLEM = {
    "task_id": "toy/add",
    "prompt": 'def add(a, b):\n    """Return a + b."""\n',
    "entry_point": "add",
    "canonical_solution": "    return a + b\n",
    "test": "def check(candidate):\n    assert candidate(1, 2) == 3\n",
}


class _Controller:
    """What pytest's controller parsed of the compiled problems by the end of its session."""

    parsed: int | None = None

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        session = config.pluginmanager.get_plugin("codeeval-session")
        self.parsed = session.problems.parsed_count()


def test_the_controller_writes_rows_history_and_report_without_parsing_problems(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sqlite3

    history = pytester.path / "history.sqlite"
    monkeypatch.setenv("CODEEVAL_HISTORY", str(history))
    suite = pytester.path / "problems.jsonl"
    suite.write_text(json.dumps(PROBLEM) + "\n")
    samples = pytester.path / "samples.jsonl"
    samples.write_text(
        json.dumps({"task_id": "toy/add", "completion": "    return a + b\n"}) + "\n"
    )
    probe = _Controller()
    result = pytester.inline_run(
        "--llm-eval", f"jsonl:{suite}", "--llm-samples", str(samples),
        "--llm-out", str(pytester.path / "out"), "-n", "0", plugins=[probe],
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.OK
    assert probe.parsed == 0  # rows came built from the item; suites and prompts from headers
    with sqlite3.connect(history) as con:
        assert con.execute("SELECT prompt FROM samples").fetchall() == [(PROBLEM["prompt"],)]
