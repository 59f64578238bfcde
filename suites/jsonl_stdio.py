"""A user's own stdin -> stdout problems in a ``jsonl:PATH`` suite (beside HumanEval-shaped ones).

A line is a stdio problem when it has ``tests`` (a list) instead of HumanEval's ``test``:

``task_id`` and ``prompt`` (the statement), strings;
``tests``: ``[{"input": "1 2\\n", "output": "3\\n", "hidden": false}, ...]`` (``hidden``
defaults to true: only the tests marked ``"hidden": false`` are shown as examples);
or, with ``fn_name`` (a call-based problem, Python, judged on the value path),
``[{"args": [1, 2], "expected": 3}, ...]``;
optional: ``language`` (``python``, ``cpp``, ``java``, ``rs``, ``js``), ``time_limit_s``,
``memory_mb``, ``starter_code``, ``canonical_solution`` (a whole program that passes), and
``checker``: ``{"kind": "tokens" | "float" | "exact" | "special", "abs_tol", "rel_tol",
"case_insensitive", "judge"}`` (``judge``: the special judge's Python source, run as
``judge INPUT OUTPUT ANSWER``, exit 0 accepts).

A malformed line raises an error naming the file, the line and the field.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from harness.records import Problem
from harness.stdio.problem import STDIO_LANGUAGES, Checker
from suites.stdio_build import to_problem
from suites.stdio_data import IoTest, StdioRecord, SuiteOptions

CHECKER_KINDS = ("tokens", "float", "exact", "special")
# (file, line, field, message) -> the exception the jsonl suite raises
ErrorFactory = Callable[[str, int, str | None, str], Exception]


def is_stdio_record(record: dict[str, Any]) -> bool:
    """Whether a line describes a stdio problem (``tests``) rather than HumanEval's ``test``."""
    return "tests" in record and "test" not in record


def _number(
    record: dict[str, Any], name: str, fail: Callable[[str, str], Exception]
) -> float | None:
    value = record.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise fail(name, f"expected a positive number, got {value!r}")
    return float(value)


def _checker(value: Any, fail: Callable[[str, str], Exception]) -> Checker | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise fail("checker", 'expected an object such as {"kind": "float"}')
    kind = value.get("kind", "tokens")
    if kind not in CHECKER_KINDS:
        raise fail("checker.kind", f"{kind!r} is not one of {', '.join(CHECKER_KINDS)}")
    unknown = set(value) - {"kind", "abs_tol", "rel_tol", "case_insensitive", "judge"}
    if unknown:
        raise fail("checker", f"unknown keys {sorted(unknown)}")
    for key in ("abs_tol", "rel_tol"):
        tol = value.get(key, 1e-6)
        if isinstance(tol, bool) or not isinstance(tol, int | float) or tol < 0:
            raise fail(f"checker.{key}", f"expected a number >= 0, got {tol!r}")
    if not isinstance(value.get("case_insensitive", False), bool):
        raise fail("checker.case_insensitive", "expected true or false")
    judge = value.get("judge", "")
    if not isinstance(judge, str) or (kind == "special" and not judge.strip()):
        raise fail("checker.judge", "a special checker needs the judge's Python source")
    return Checker(
        kind,
        abs_tol=float(value.get("abs_tol", 1e-6)),
        rel_tol=float(value.get("rel_tol", 1e-6)),
        case_insensitive=value.get("case_insensitive", False),
        judge_source=judge,
    )


def _tests(
    record: dict[str, Any], fn_name: str | None, fail: Callable[[str, str], Exception]
) -> list[IoTest]:
    tests = record["tests"]
    if not isinstance(tests, list) or not tests:
        raise fail("tests", "expected a non-empty list of tests")
    out = []
    for index, test in enumerate(tests):
        name = f"tests[{index}]"
        if not isinstance(test, dict):
            raise fail(name, "expected an object")
        hidden = test.get("hidden", True)
        if not isinstance(hidden, bool):
            raise fail(f"{name}.hidden", "expected true or false")
        group = "private" if hidden else "public"
        if fn_name:
            if not isinstance(test.get("args"), list) or "expected" not in test:
                raise fail(name, 'a call-based test is {"args": [...], "expected": value}')
            args = "\n".join(json.dumps(a) for a in test["args"])
            out.append(IoTest(args, json.dumps(test["expected"]), group, "functional"))
            continue
        for key in ("input", "output"):
            if not isinstance(test.get(key), str):
                raise fail(f"{name}.{key}", "missing or not a string")
        out.append(IoTest(test["input"], test["output"], group))
    return out


def stdio_from_record(
    record: dict[str, Any], suite: str, file: str, line: int, error: ErrorFactory
) -> Problem:
    """The :class:`Problem` of one stdio line; ``error`` makes the jsonl suite's error."""

    def fail(field: str, message: str) -> Exception:
        return error(file, line, field, message)

    for name in ("task_id", "prompt"):
        if not isinstance(record.get(name), str) or not record[name].strip():
            raise fail(name, "missing or not a non-empty string")
    for name in ("starter_code", "canonical_solution", "fn_name"):
        if record.get(name) is not None and not isinstance(record[name], str):
            raise fail(name, f"expected a string, got {type(record[name]).__name__}")
    fn_name = record.get("fn_name") or None
    if fn_name and not fn_name.isidentifier():
        raise fail("fn_name", f"{fn_name!r} is not a Python name")
    language = record.get("language", "python")
    if language not in STDIO_LANGUAGES:
        raise fail("language", f"{language!r} is not one of {', '.join(STDIO_LANGUAGES)}")
    stdio = StdioRecord(
        suite=suite,
        task_id=record["task_id"],
        statement=record["prompt"],
        tests=tuple(_tests(record, fn_name, fail)),
        starter_code=record.get("starter_code") or "",
        fn_name=fn_name,
        time_limit_s=_number(record, "time_limit_s", fail),
        memory_limit_mb=_number(record, "memory_mb", fail),
        reference=record.get("canonical_solution") or "",
        reference_language=language,
        checker=_checker(record.get("checker"), fail),
        metadata={"source_file": file, "source_line": line},
    )
    return to_problem(stdio, SuiteOptions(language))
