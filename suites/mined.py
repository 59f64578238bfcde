"""Suites mined from a repository (``codeeval mine``): ``load_suite("jsonl:ours.jsonl")``.

A mined suite is a JSONL file whose lines carry ``"format": "codeeval-mined/1"`` (see
docs/formats.md); the ``jsonl:`` loader hands such a file here. Its splits are ``test`` (every
problem) and one per tier (``tier0``, ``tier1``, ``tier2``), so ``--llm-split tier0`` or
``tier1+tier2`` select tiers. A malformed line raises :class:`JsonlSuiteError` naming the
file, the line and the field.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from pathlib import Path
from typing import Any

from harness.mining.model import FORMAT
from harness.mining.problem import problem_from_record
from harness.records import Problem
from suites.jsonl_suite import JsonlSuiteError

_STRINGS = (
    "task_id",
    "prompt",
    "entry_point",
    "canonical_solution",
    "path",
    "tier",
    "repository_zip",
)
_TIER = re.compile(r"^tier[0-9]+$")


def is_mined_suite(path: str | Path) -> bool:
    """Whether the first non-empty line of ``path`` declares the mined format."""
    try:
        with open(path, "rb") as fh:
            for raw in fh:
                if raw.strip():
                    record = json.loads(raw)
                    return isinstance(record, dict) and record.get("format") == FORMAT
    except (OSError, ValueError):
        return False  # the plain loader reports what is wrong with it
    return False


def load_mined(path: str | Path, suite: str | None = None) -> dict[str, list[Problem]]:
    """The splits of a mined suite: ``test`` (all problems, in file order) and each tier."""
    file = str(path)
    suite = suite or f"jsonl:{path}"
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise JsonlSuiteError(file, 0, None, f"cannot read the suite: {exc}") from exc
    problems: list[Problem] = []
    seen: dict[str, int] = {}
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        record = _record(raw, file, number)
        if record["task_id"] in seen:
            raise JsonlSuiteError(
                file,
                number,
                "task_id",
                f"{record['task_id']!r} repeats line {seen[record['task_id']]}",
            )
        seen[record["task_id"]] = number
        problems.append(
            problem_from_record(record, suite, {"source_file": file, "source_line": number})
        )
    if not problems:
        raise JsonlSuiteError(file, 0, None, "holds no problems")
    splits: dict[str, list[Problem]] = {"test": problems}
    for problem in problems:
        splits.setdefault(problem.metadata["tier"], []).append(problem)
    return splits


def _record(raw: bytes, file: str, number: int) -> dict[str, Any]:
    def bad(field: str | None, message: str) -> JsonlSuiteError:
        return JsonlSuiteError(file, number, field, message)

    try:
        record = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise bad(None, f"not valid JSON: {exc}") from None
    if not isinstance(record, dict):
        raise bad(None, f"expected a JSON object, got {type(record).__name__}")
    if record.get("format") != FORMAT:
        raise bad(
            "format",
            f"expected {FORMAT!r} (every line of a mined suite), got {record.get('format')!r}",
        )
    for field in _STRINGS:
        if not isinstance(record.get(field), str) or not record[field].strip():
            got = (
                "missing"
                if field not in record
                else f"expected a non-empty string, got {record[field]!r:.60}"
            )
            raise bad(field, got)
    if not record["entry_point"].isidentifier():
        raise bad("entry_point", f"{record['entry_point']!r} is not a Python name")
    if not _TIER.match(record["tier"]):
        raise bad("tier", f"expected tier0, tier1, ..., got {record['tier']!r}")
    if (
        not isinstance(record.get("hole_line"), int)
        or isinstance(record["hole_line"], bool)
        or record["hole_line"] < 1
    ):
        raise bad(
            "hole_line",
            f"expected a line number (an integer >= 1), got {record.get('hole_line')!r}",
        )
    if not isinstance(record.get("indent"), str) or record["indent"].strip():
        raise bad(
            "indent",
            f"expected the body's indentation (spaces or tabs), got {record.get('indent')!r}",
        )
    tests = record.get("tests")
    if not isinstance(tests, list) or not tests or not all(isinstance(t, str) and t for t in tests):
        raise bad("tests", "expected a non-empty list of pytest node ids")
    if record.get("class_name") is not None and not str(record["class_name"]).isidentifier():
        raise bad("class_name", f"{record['class_name']!r} is not a Python name")
    for field, kind in (("features", dict), ("pythonpath", list), ("doctest", bool)):
        if field in record and not isinstance(record[field], kind):
            raise bad(field, f"expected a {kind.__name__}, got {type(record[field]).__name__}")
    try:
        base64.b64decode(record["repository_zip"], validate=True)
    except (binascii.Error, ValueError):
        raise bad("repository_zip", "not base64 (the zipped repository copy)") from None
    return record
