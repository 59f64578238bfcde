"""``apps-mini``: 128 APPS problems from MapCoder's ``selected150.jsonl``, the offline stdio suite.

Read from ``$CODEEVAL_DATA_DIR/apps_mapcoder150/selected150.jsonl`` (its README describes the
file). Every line has ``id``, ``description``, ``difficulty``, ``starter_code``, ``sample_io`` and
``test_list`` (``{"input": str, "output": [x]}``). It is a smoke set drawn from APPS's *train*
split (contamination is likely), never a held-out benchmark.

* Lines without starter code (49 problems) are stdio problems: ``input`` is stdin and
  ``output[0]`` the exact stdout; a test whose input is one of ``sample_io``'s is public, the
  others hidden. They run in the language the suite's option names (``apps-mini@cpp``).
* Lines with starter code (79 problems, Python only) were APPS call-based problems whose
  arguments MapCoder turned into stdin lines, one argument a line. They are judged as APPS
  judged them, on the value path: each line is parsed back into an argument and the returned
  value compared with ``output[0]``. The conversion is lossy: an argument position is read as
  raw text when any test's line there is not a JSON or Python literal; a test whose line count
  does not match the function's parameters (a string argument holding a newline) cannot be
  undone, and the problem is reported as a data error (``defects``), never as a model failure.
* A stdio statement that accepts any of several answers has one recorded answer and no special
  judge (5 problems): a data error, since a right program can be judged wrong.
* 21 ids appear on two lines. Identical copies are merged (one problem); copies that differ
  would be a data error on the problem.

Splits: ``test`` (every test; pass@k stops at a problem's first failed test), ``train`` (the
same problems as a trainer scores them: every test run for partial credit, and a stdio
problem's 15 largest inputs only, as DeepCoder does; :func:`harness.stdio.problem.training_view`).
The options of the other stdio suites apply to ``test``: ``apps-mini@partial`` runs every
test, ``apps-mini@largest5`` only the 5 largest inputs (with a language: ``apps-mini@cpp@partial``).
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

from harness.records import Problem
from harness.stdio.problem import CallTest, StdioTest, stdio_problem, training_view
from suites.errors import SuiteError
from suites.stdio_data import (
    TRAINING_OPTIONS,
    StdioDataError,
    no_more_options,
    read_jsonl_rows,
    read_options,
    suite_name,
)

SUITE = "apps-mini"
FOLDER = "apps_mapcoder150"
FILE = "selected150.jsonl"
TRAIN_LARGEST = 15  # DeepCoder keeps the 15 largest-input tests of a problem for training
_DEF = re.compile(r"def\s+([A-Za-z_]\w*)\s*\(([^)]*)\)")
# A statement that accepts any of several answers: the data keeps one and has no special judge.
_ANY_ANSWER = re.compile(
    r"(print|output|find) any|any of them|any one of them|any (such|valid|correct|optimal)", re.I
)


def data_path(data_dir: Path | None) -> Path:
    if data_dir is None:
        raise SuiteError(
            f"{SUITE}: set CODEEVAL_DATA_DIR (or pass data_dir) to the folder that holds "
            f"{FOLDER}/{FILE}"
        )
    path = Path(data_dir) / FOLDER / FILE
    if not path.is_file():
        raise SuiteError(f"{SUITE}: {path} is missing (see the data folder's README.md)")
    return path


def load(data_dir: Path | None = None, option: str | None = None) -> dict[str, list[Problem]]:
    """The suite's splits: ``test`` and ``train`` (see the module docstring)."""
    options = read_options(option, SUITE)
    no_more_options(options.rest, SUITE, TRAINING_OPTIONS)
    language = options.language
    path = data_path(data_dir)
    suite = suite_name(SUITE, option)
    seen: dict[int, tuple[str, dict[str, Any]]] = {}
    differing: set[int] = set()
    for where, row in read_jsonl_rows(path):
        number = row.get("id")
        if not isinstance(number, int):
            raise StdioDataError(where, "id", f"expected an integer, got {number!r}")
        if number in seen:
            if seen[number][1] != row:
                differing.add(number)
            continue
        seen[number] = (where, row)
    problems = []
    for number, (where, row) in seen.items():
        if row.get("starter_code") and language != "python":
            continue  # call-based: the value path is Python's
        problem = parse_row(where, row, suite, language, path.parent)
        if number in differing:
            defect = f"id {number} appears on two lines with different content"
            problem = _with_defect(problem, defect)
        problems.append(problem)
    train = [training_view(p, TRAIN_LARGEST) for p in problems]
    if options.every_test:  # NAME@partial, NAME@largestN: the test split as a trainer scores it
        problems = [training_view(p, options.largest) for p in problems]
    return {"test": problems, "train": train}


def parse_row(
    where: str, row: dict[str, Any], suite: str, language: str, data_folder: Path
) -> Problem:
    """One line of the file as a :class:`Problem` (stdio, or call-based on the value path)."""
    tests = _tests(where, row, "test_list")
    samples = {t["input"] for t in _tests(where, row, "sample_io", allow_empty=True)}
    number = row["id"]
    statement = _text(where, row, "description")
    metadata = {
        "difficulty": row.get("difficulty", ""),
        "apps_id": number,
        # The candidate must not read the expected outputs from the mirror.
        "hide_paths": [str(data_folder.resolve())],
        "source": f"{where}",
    }
    task_id = f"{SUITE}/{number}"
    starter = row.get("starter_code") or ""
    if not starter:
        stdio_tests = [
            StdioTest(t["input"], _expected_text(where, t), hidden=t["input"] not in samples)
            for t in tests
        ]
        defects = []
        if _ANY_ANSWER.search(statement):
            defects.append(
                "the statement accepts any of several answers, but the data has one expected "
                "output and no special judge: a right answer can be judged wrong"
            )
        return stdio_problem(
            suite,
            task_id,
            statement,
            stdio_tests,
            language=language,
            defects=defects,
            metadata=metadata,
        )
    found = _DEF.search(starter)
    if not found:
        raise StdioDataError(where, "starter_code", "no function definition in it")
    fn_name = found.group(1)
    params = [p.split("=")[0].strip() for p in found.group(2).split(",")]
    params = [p for p in params if p and p != "self" and not p.startswith("*")]
    call_tests, defects = call_based_tests(tests, samples, len(params))
    return stdio_problem(
        suite,
        task_id,
        statement,
        call_tests,
        fn_name=fn_name,
        starter_code=starter.strip("\n"),
        defects=defects,
        metadata=metadata,
    )


def call_based_tests(
    tests: list[dict[str, Any]], samples: set[str], arity: int
) -> tuple[list[CallTest], list[str]]:
    """MapCoder's stdin lines turned back into arguments, and the defects of the conversion."""
    split = [_argument_lines(t["input"], arity) for t in tests]
    defects = []
    bad = [i + 1 for i, lines in enumerate(split) if len(lines) != arity]
    if bad:
        defects.append(
            f"lossy conversion: test(s) {', '.join(map(str, bad[:5]))} have a line count other "
            f"than the function's {arity} parameter(s) (an argument with a newline?)"
        )
    # A position is text when any test's line there is not a literal.
    raw = [
        any(len(lines) > pos and _literal(lines[pos]) is _NOT_LITERAL for lines in split)
        for pos in range(arity)
    ]
    call_tests = []
    for test, lines in zip(tests, split, strict=True):
        if len(lines) != arity:
            args: tuple[Any, ...] = tuple(lines)
        else:
            args = tuple(line if raw[pos] else _literal(line) for pos, line in enumerate(lines))
        output = test["output"][0] if test["output"] else None
        call_tests.append(CallTest(args, output, hidden=test["input"] not in samples))
    return call_tests, defects


_NOT_LITERAL = object()


def _literal(line: str) -> Any:
    """The value a line spells as JSON, else as a Python literal, else ``_NOT_LITERAL``."""
    try:
        return json.loads(line)
    except ValueError:
        pass
    try:
        return ast.literal_eval(line)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return _NOT_LITERAL


def _argument_lines(text: str, arity: int) -> list[str]:
    lines = text.split("\n")
    if len(lines) == arity + 1 and lines[-1] == "":
        lines.pop()  # a trailing newline after the last argument
    if arity == 0 and lines == [""]:
        return []
    return lines


def _tests(
    where: str, row: dict[str, Any], name: str, *, allow_empty: bool = False
) -> list[dict[str, Any]]:
    value = row.get(name, [] if allow_empty else None)
    if not isinstance(value, list) or not (value or allow_empty):
        raise StdioDataError(where, name, "expected a non-empty list of tests")
    for index, test in enumerate(value):
        if not isinstance(test, dict) or not isinstance(test.get("input"), str):
            raise StdioDataError(where, f"{name}[{index}].input", "expected a string")
        if not isinstance(test.get("output"), list) or len(test["output"]) != 1:
            raise StdioDataError(where, f"{name}[{index}].output", "expected a one-item list")
    return value


def _expected_text(where: str, test: dict[str, Any]) -> str:
    value = test["output"][0]
    if not isinstance(value, str):
        raise StdioDataError(where, "test_list.output", f"expected stdout text, got {value!r}")
    return value


def _text(where: str, row: dict[str, Any], name: str) -> str:
    value = row.get(name)
    if not isinstance(value, str) or not value.strip():
        raise StdioDataError(where, name, "expected a non-empty string")
    return value


def _with_defect(problem: Problem, defect: str) -> Problem:
    import dataclasses

    return dataclasses.replace(problem, defects=(*problem.defects, defect))
