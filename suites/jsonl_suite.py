"""A user's own problems in HumanEval shape: ``load_suite("jsonl:PATH")``.

One JSON object per line with ``task_id``, ``prompt``, ``entry_point`` and ``test`` (a module
defining ``def check(candidate):``), all strings, and optionally ``canonical_solution`` (the body
that continues the prompt) and ``dependencies``: the third-party modules the problem's
programs, tests and reference may import, each pinned (``{"bs4": "beautifulsoup4==4.12.3"}``,
harness.deps). ``codeeval deps fetch jsonl:PATH`` installs them; until then the problem is a
data defect naming that command. A malformed line raises :class:`JsonlSuiteError` naming the
file, the line and the field; so does a repeated ``task_id``.

A line with ``tests`` (a list of stdin/expected-stdout pairs) instead of ``test`` is a
stdin -> stdout problem (``suites.jsonl_stdio``, docs/stdio_suites.md); a file may mix both.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from harness.deps.pins import PinError
from harness.deps.resolve import resolve
from harness.deps.sources import FIELD as DEPENDENCIES
from harness.deps.sources import check_entries
from harness.pipeline.data_tests import confine_data_tests
from harness.records import Problem
from suites.defects import missing_modules, parse_error
from suites.errors import SuiteError
from suites.humaneval import problem_from_record
from suites.jsonl_stdio import is_stdio_record, stdio_from_record

REQUIRED_FIELDS = ("task_id", "prompt", "entry_point", "test")
OPTIONAL_FIELDS = ("canonical_solution",)


class JsonlSuiteError(SuiteError):
    """A problems file that cannot be used; the message names the file, line and field."""

    def __init__(self, file: str, line: int, field: str | None, message: str):
        self.file, self.line, self.field = file, line, field
        where = f"{file}:{line}" if line else file
        super().__init__(f"{where}: {field}: {message}" if field else f"{where}: {message}")


def load_jsonl(path: str | Path, suite: str | None = None) -> list[Problem]:
    """The problems of a JSONL file, in file order (``suite`` defaults to ``jsonl:PATH``)."""
    path = Path(path)
    file = str(path)
    suite = suite or f"jsonl:{path}"
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise JsonlSuiteError(file, 0, None, f"cannot read the problems file: {exc}") from exc
    problems: list[Problem] = []
    seen: dict[str, int] = {}
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        record = _parse_object(raw, file, number)
        if is_stdio_record(record):
            problem = stdio_from_record(record, suite, file, number, JsonlSuiteError)
        else:
            record = _check_record(record, file, number)
            problem = _problem(record, suite, file, number)
        task_id = problem.task_id
        if task_id in seen:
            raise JsonlSuiteError(
                file, number, "task_id", f"{task_id!r} repeats line {seen[task_id]}"
            )
        seen[task_id] = number
        problems.append(problem)
    if not problems:
        raise JsonlSuiteError(file, 0, None, "holds no problems")
    return problems


def _problem(record: dict[str, Any], suite: str, file: str, number: int) -> Problem:
    """A HumanEval-shaped line's problem; its tests are the user's data, so they run confined
    (harness.pipeline.data_tests), never in the trusted process."""
    extra: dict[str, Any] = {"source_file": file, "source_line": number}
    own = record.get(DEPENDENCIES) or {}
    if not own:
        return confine_data_tests(problem_from_record(record, suite, extra))
    reference = record["prompt"] + (record.get("canonical_solution") or "")
    needs = [m for m in missing_modules([record["test"], reference]) if m in own]
    extra.update(dependencies=own, dependencies_source=f"{file}:{number}", deps_needs=needs)
    return confine_data_tests(resolve(problem_from_record(record, suite, extra, allowed=own)))


def _parse_object(raw: bytes, file: str, number: int) -> dict[str, Any]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise JsonlSuiteError(file, number, None, f"not valid UTF-8 at byte {exc.start}") from None
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        raise JsonlSuiteError(file, number, None, f"not valid JSON: {exc}") from None
    if not isinstance(record, dict):
        raise JsonlSuiteError(
            file, number, None, f"expected a JSON object, got {type(record).__name__}"
        )
    return record


def _check_record(record: dict[str, Any], file: str, number: int) -> dict[str, Any]:
    """A HumanEval-shaped line's fields, checked."""
    for field in REQUIRED_FIELDS:
        if field not in record:
            raise JsonlSuiteError(file, number, field, "missing")
        if not isinstance(record[field], str):
            raise JsonlSuiteError(
                file, number, field, f"expected a string, got {type(record[field]).__name__}"
            )
        if not record[field].strip():
            raise JsonlSuiteError(file, number, field, "empty")
    for field in OPTIONAL_FIELDS:
        if record.get(field) is not None and not isinstance(record[field], str):
            raise JsonlSuiteError(
                file, number, field, f"expected a string, got {type(record[field]).__name__}"
            )
    if record.get(DEPENDENCIES) is not None:
        try:
            record[DEPENDENCIES] = check_entries(record[DEPENDENCIES])
        except PinError as exc:
            raise JsonlSuiteError(file, number, DEPENDENCIES, str(exc)) from None
    if not record["entry_point"].isidentifier():
        raise JsonlSuiteError(
            file, number, "entry_point", f"{record['entry_point']!r} is not a Python name"
        )
    problem = parse_error(record["test"], "the test code")
    if problem:
        raise JsonlSuiteError(file, number, "test", problem)
    if not re.search(r"^def check\(", record["test"], re.MULTILINE):
        raise JsonlSuiteError(file, number, "test", "defines no top-level `def check(candidate):`")
    return record
