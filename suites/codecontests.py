"""CodeContests (``deepmind/code_contests``): 13,328 train, 117 valid and 165 test problems.

Each row has ``name`` (unique, e.g. ``"1548_E. Gregor and the Two Painters"``),
``description``, ``public_tests``, ``private_tests`` and ``generated_tests`` (each
``{"input": [...], "output": [...]}``), ``source`` and ``difficulty`` (enum numbers, named in
the metadata), ``solutions`` and ``incorrect_solutions`` (``{"language": [...], "solution":
[...]}``, languages 1 Python 2, 2 C++, 3 Python 3, 4 Java), ``cf_contest_id``, ``cf_index``,
``cf_points``, ``cf_rating``, ``cf_tags``, ``is_description_translated``,
``untranslated_description``, ``time_limit`` (``{"seconds", "nanos"}`` or null),
``memory_limit_bytes``, ``input_file`` and ``output_file``.

Every test group runs: public tests are shown, private and generated ones are hidden (the
metadata counts each group). Time and memory limits are the data's own. A problem that reads
or writes a named file instead of stdin/stdout is a data defect here. The reference is the
first correct solution in the program's language (Python 3 for Python, C++ for cpp, Java).

Splits ``train``, ``valid``, ``test``. Data: a mirror folder ``code_contests/`` with
``train.jsonl``, ``valid.jsonl``, ``test.jsonl`` (rows as the hub gives them) under
``data_dir`` or ``$CODEEVAL_DATA_DIR``, else the hub. ``codecontests@cpp``: programs in C++.
"""

from __future__ import annotations

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
    hub_rows,
    mirror_rows,
    no_more_options,
    read_options,
    suite_name,
    text_field,
    unique_ids,
)

SUITE = "codecontests"
HUB_NAME = "deepmind/code_contests"
MIRROR = "code_contests"
SPLITS = ("train", "valid", "test")
TEST_FIELDS = (("public_tests", "public"), ("private_tests", "private"))
TEST_FIELDS += (("generated_tests", "generated"),)
SOURCES = ("UNKNOWN_SOURCE", "CODECHEF", "CODEFORCES", "HACKEREARTH", "CODEJAM", "ATCODER", "AIZU")
DIFFICULTIES = ("UNKNOWN_DIFFICULTY", "EASY", "MEDIUM", "HARD", "HARDER", "HARDEST", "EXTERNAL")
DIFFICULTIES += tuple(chr(c) for c in range(ord("A"), ord("V") + 1))  # 7 = A ... 28 = V
# The solutions' language numbers that fit each program language.
SOLUTION_LANGUAGES = {"python": 3, "cpp": 2, "java": 4}


def tests_of(row: dict[str, Any], name: str, group: str, where: str) -> list[IoTest]:
    """One test group: ``{"input": [...], "output": [...]}`` of equal length (null: none)."""
    value = row.get(name)
    if value is None:
        return []
    if not isinstance(value, dict):
        raise StdioDataError(where, name, f"expected an object, got {type(value).__name__}")
    inputs, outputs = value.get("input"), value.get("output")
    for key, items in (("input", inputs), ("output", outputs)):
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise StdioDataError(where, f"{name}.{key}", "missing or not a list of strings")
    assert isinstance(inputs, list) and isinstance(outputs, list)
    if len(inputs) != len(outputs):
        raise StdioDataError(
            where, name, f"{len(inputs)} inputs but {len(outputs)} outputs (they pair up)"
        )
    return [IoTest(i, o, group) for i, o in zip(inputs, outputs, strict=True)]


def time_limit_s(row: dict[str, Any], where: str) -> float | None:
    value = row.get("time_limit")
    if value is None:
        return None
    if not isinstance(value, dict) or not all(
        isinstance(value.get(k, 0), int) for k in ("seconds", "nanos")
    ):
        raise StdioDataError(where, "time_limit", "expected {seconds, nanos} integers or null")
    seconds = value.get("seconds", 0) + value.get("nanos", 0) / 1e9
    return seconds if seconds > 0 else None


def memory_mb(row: dict[str, Any], where: str) -> float | None:
    value = row.get("memory_limit_bytes")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise StdioDataError(where, "memory_limit_bytes", f"expected a byte count, got {value!r}")
    return value / 2**20 if value else None


def first_solution(row: dict[str, Any], language_number: int | None, where: str) -> str:
    """The first correct solution in the given language (CodeContests' enum), or ``""``."""
    value = row.get("solutions")
    if language_number is None or not isinstance(value, dict):
        return ""
    languages, programs = value.get("language") or [], value.get("solution") or []
    if len(languages) != len(programs):
        raise StdioDataError(where, "solutions", "language and solution lists differ in length")
    return next((p for n, p in zip(languages, programs, strict=True) if n == language_number), "")


def _enum_name(row: dict[str, Any], name: str, names: tuple[str, ...], where: str) -> str:
    value = row.get(name, 0)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < len(names):
        raise StdioDataError(where, name, f"{value!r} is not a known {name} number")
    return names[value]


def parse_row(
    where: str, row: dict[str, Any], language: str = "python", suite: str = SUITE
) -> StdioRecord:
    """One CodeContests row as a :class:`StdioRecord`."""
    name = text_field(row, "name", where)
    if not name.strip():
        raise StdioDataError(where, "name", "empty")
    tests = [t for field, group in TEST_FIELDS for t in tests_of(row, field, group, where)]
    defects = [] if tests else ["public_tests, private_tests, generated_tests: no tests"]
    for field in ("input_file", "output_file"):
        if row.get(field):
            defects.append(f"{field}: the program must use the file {row[field]!r}, not stdio")
    return StdioRecord(
        suite=suite,
        task_id=name,
        statement=text_field(row, "description", where),
        tests=tuple(tests),
        time_limit_s=time_limit_s(row, where),
        memory_limit_mb=memory_mb(row, where),
        reference=first_solution(row, SOLUTION_LANGUAGES.get(language), where),
        reference_language=language,
        defects=tuple(defects),
        metadata={
            "source_site": _enum_name(row, "source", SOURCES, where),
            "difficulty": _enum_name(row, "difficulty", DIFFICULTIES, where),
            "cf_contest_id": row.get("cf_contest_id") or 0,
            "cf_index": str(row.get("cf_index") or ""),
            "cf_rating": row.get("cf_rating") or 0,
            "cf_tags": list(row.get("cf_tags") or []),
            "source": where,
        },
    )


def _rows(data_dir: Path | None) -> dict[str, list[Row]]:
    mirrored = mirror_rows(data_dir, MIRROR, SPLITS, SUITE)
    if mirrored is not None:
        return mirrored
    hint = f"a folder {MIRROR}/ with train/valid/test.jsonl in $CODEEVAL_DATA_DIR"
    return hub_rows(HUB_NAME, SUITE, hint)


def load(data_dir: Path | None = None, option: str | None = None) -> dict[str, list[Problem]]:
    """CodeContests' splits (``train``, ``valid``, ``test``)."""
    options = read_options(option, SUITE)
    no_more_options(options.rest, SUITE, TRAINING_OPTIONS)
    suite = suite_name(SUITE, option)
    splits: dict[str, list[Problem]] = {}
    for split, rows in _rows(data_dir).items():
        records = unique_ids([(w, parse_row(w, r, options.language, suite)) for w, r in rows])
        splits[split] = [to_problem(r, options) for r in records]
    return splits
