"""APPS (``codeparrot/apps``): 10,000 problems, train and test, three difficulties.

Each row has ``problem_id`` (``id`` in the data set's raw ``train.jsonl``/``test.jsonl``),
``question``, ``solutions`` (a JSON string: a list of Python programs, or ``""``),
``input_output`` (a JSON string: ``{"inputs": [...], "outputs": [...]}`` with an optional
``fn_name``; or ``""``), ``difficulty`` (introductory, interview, competition), ``url`` and
``starter_code``. Without ``fn_name`` a test is stdin text and the expected stdout (APPS writes
some as lists of lines: they are joined); with it, a test is the argument list and the return
value, judged on the value path. APPS wraps most call results in a one-element list
(``"outputs": [[3]]``); its own checker accepts the value or the list, and here the one element
is the expected value (a function that really returns a one-element list is the rare case
this misjudges; see docs/stdio_suites.md).

Splits: ``train``, ``test``, and per difficulty ``test_introductory``, ``train_competition``...
Task ids are ``apps/SPLIT/ID`` (the two splits number their problems alike). Data: a mirror
folder ``apps/`` with ``train.jsonl``/``test.jsonl`` (the hub's own files) under ``data_dir``
or ``$CODEEVAL_DATA_DIR``, else the hub. (The 150-problem MapCoder subset in the shared data is
the stdio core's ``apps-mini``.) Options: ``apps@cpp`` asks for programs in another language.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.records import Problem
from suites.stdio_build import to_problem
from suites.stdio_data import (
    TRAINING_OPTIONS,
    IoTest,
    Row,
    StdioDataError,
    StdioRecord,
    hub_file_rows,
    json_text_field,
    mirror_rows,
    no_more_options,
    read_options,
    suite_name,
    text_field,
    unique_ids,
)
from suites.stdio_encodings import parse_input_output

SUITE = "apps"
HUB_NAME = "codeparrot/apps"
MIRROR = "apps"
SPLITS = ("train", "test")
DIFFICULTIES = ("introductory", "interview", "competition")


def problem_number(row: dict[str, Any], where: str) -> int:
    """The row's ``problem_id`` (or ``id``, as the raw files name it)."""
    for name in ("problem_id", "id"):
        if name in row:
            value = row[name]
            if isinstance(value, bool) or not isinstance(value, int):
                raise StdioDataError(where, name, f"expected an integer, got {value!r}")
            return value
    raise StdioDataError(where, "problem_id", "missing (nor is there an id)")


def solutions(row: dict[str, Any], where: str) -> list[str]:
    """The row's reference programs (``solutions``: a JSON list of strings, or empty)."""
    if not row.get("solutions"):
        return []
    value = json_text_field(row, "solutions", where)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise StdioDataError(where, "solutions", "expected a JSON list of programs")
    return value


def unwrap_call_outputs(tests: list[IoTest]) -> list[IoTest]:
    """APPS's call-based outputs as the returned value: ``[v]`` becomes ``v``."""
    out = []
    for test in tests:
        value = json.loads(test.output)
        if isinstance(value, list) and len(value) == 1:
            value = value[0]
        out.append(IoTest(test.input, json.dumps(value), test.group, test.kind))
    return out


def io_tests(row: dict[str, Any], where: str) -> tuple[list[IoTest], str | None, list[str]]:
    """The tests of an APPS-shaped row (``input_output``); an empty one is a defect."""
    if not row.get("input_output"):
        return [], None, ["input_output: empty, the problem has no tests"]
    tests, fn_name, defects = parse_input_output(json_text_field(row, "input_output", where), where)
    return (unwrap_call_outputs(tests) if fn_name else tests), fn_name, defects


def parse_row(where: str, row: dict[str, Any], split: str, suite: str = SUITE) -> StdioRecord:
    """One APPS row as a :class:`StdioRecord`."""
    number = problem_number(row, where)
    difficulty = text_field(row, "difficulty", where)
    if difficulty not in DIFFICULTIES:
        raise StdioDataError(where, "difficulty", f"{difficulty!r} is not one of {DIFFICULTIES}")
    tests, fn_name, defects = io_tests(row, where)
    programs = solutions(row, where)
    return StdioRecord(
        suite=suite,
        task_id=f"apps/{split}/{number}",
        statement=text_field(row, "question", where),
        tests=tuple(tests),
        starter_code=text_field(row, "starter_code", where, required=False),
        fn_name=fn_name,
        reference=programs[0] if programs else "",
        defects=tuple(defects),
        metadata={
            "difficulty": difficulty,
            "url": text_field(row, "url", where, required=False),
            "problem_id": number,
            "solutions": len(programs),
            "source": where,
        },
    )


def _rows(data_dir: Path | None) -> dict[str, list[Row]]:
    mirrored = mirror_rows(data_dir, MIRROR, SPLITS, SUITE)
    if mirrored is not None:
        return mirrored
    hint = f"a folder {MIRROR}/ with train.jsonl/test.jsonl in $CODEEVAL_DATA_DIR"
    return {split: hub_file_rows(HUB_NAME, f"{split}.jsonl", SUITE, hint) for split in SPLITS}


def load(data_dir: Path | None = None, option: str | None = None) -> dict[str, list[Problem]]:
    """APPS's splits, and each split per difficulty (``test_interview``...)."""
    options = read_options(option, SUITE)
    no_more_options(options.rest, SUITE, TRAINING_OPTIONS)
    suite = suite_name(SUITE, option)
    splits: dict[str, list[Problem]] = {}
    for split, rows in _rows(data_dir).items():
        records = unique_ids([(w, parse_row(w, r, split, suite)) for w, r in rows])
        splits[split] = [to_problem(r, options) for r in records]
        for difficulty in DIFFICULTIES:
            splits[f"{split}_{difficulty}"] = [
                p for p in splits[split] if p.metadata["difficulty"] == difficulty
            ]
    return splits
