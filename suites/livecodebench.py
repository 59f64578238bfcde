"""LiveCodeBench code generation (``livecodebench/code_generation_lite``).

Each row has ``question_title``, ``question_content``, ``platform`` (leetcode, atcoder,
codeforces), ``question_id``, ``contest_id``, ``contest_date`` (ISO date-time),
``starter_code``, ``difficulty`` (easy, medium, hard), ``public_test_cases`` (a JSON string: a
list of ``{"input", "output", "testtype"}``), ``private_test_cases`` (the same JSON, or when
large base64 of zlib of a pickled JSON string) and ``metadata`` (a JSON string; a call-based
LeetCode problem names its method in ``func_name``). A ``functional`` test's input is one JSON
value a line (the arguments) and its output a JSON value; a ``stdin`` test is plain text.

Releases: the data set's files ``test.jsonl`` .. ``test6.jsonl`` each add the problems of one
release; ``release_vN`` is files 1..N, ``vN`` file N alone. Those are the suite's splits
(``--llm-split release_v5``, ``v6``, ``release_v4[:50]``); ``test`` is every release.

The date window against contamination is part of the suite name:
``livecodebench@2024-08-01..2025-02-01`` keeps the problems whose contest date falls in that
window (both ends included, as LiveCodeBench's own ``--start_date/--end_date``); either end
may be left out (``livecodebench@2024-08-01..``).

Data: a mirror folder ``livecodebench/`` (with ``test.jsonl``...) under ``data_dir`` or
``$CODEEVAL_DATA_DIR``, else the hub files. The private pickle is read by an unpickler that
loads strings only, so hub data never runs code here.
"""

from __future__ import annotations

import json
import re
from datetime import date, datetime
from pathlib import Path
from typing import Any

from harness.records import Problem
from suites.errors import SuiteError
from suites.stdio_build import to_problem
from suites.stdio_data import (
    HubFileMissing,
    IoTest,
    Row,
    StdioDataError,
    StdioRecord,
    find_mirror,
    hub_file_rows,
    json_text_field,
    read_jsonl_rows,
    read_options,
    suite_name,
    text_field,
    unique_ids,
)
from suites.stdio_encodings import decode_compressed_json

SUITE = "livecodebench"
HUB_NAME = "livecodebench/code_generation_lite"
MIRROR = "livecodebench"
MAX_RELEASES = 30  # looked for on the hub: test.jsonl, test2.jsonl, ... until one is missing
PLATFORMS = ("leetcode", "atcoder", "codeforces")
DIFFICULTIES = ("easy", "medium", "hard")
TEST_TYPES = ("stdin", "functional")
_WINDOW = re.compile(r"^(\d{4}-\d{2}-\d{2})?\.\.(\d{4}-\d{2}-\d{2})?$")


def parse_window(option: str) -> tuple[date | None, date | None]:
    """``FROM..TO`` (either end may be empty) as dates; a clear error otherwise."""
    match = _WINDOW.match(option.strip())
    if not match or option.strip() == "..":
        raise SuiteError(
            f"{SUITE}: date window {option!r} is not FROM..TO with dates as YYYY-MM-DD "
            "(e.g. livecodebench@2024-08-01..2025-02-01, or livecodebench@2024-08-01..)"
        )
    try:
        start, end = (date.fromisoformat(g) if g else None for g in match.groups())
    except ValueError as exc:
        raise SuiteError(f"{SUITE}: date window {option!r}: {exc}") from None
    if start and end and start > end:
        raise SuiteError(f"{SUITE}: date window {option!r} ends before it starts")
    return start, end


def _tests(row: dict[str, Any], name: str, group: str, where: str) -> list[IoTest]:
    raw = text_field(row, name, where)
    try:
        cases = json.loads(raw)
    except json.JSONDecodeError:
        try:
            cases = decode_compressed_json(raw)
        except ValueError as exc:
            raise StdioDataError(where, name, f"neither JSON nor compressed JSON ({exc})") from None
    if not isinstance(cases, list):
        raise StdioDataError(where, name, f"expected a list of tests, got {type(cases).__name__}")
    tests = []
    for index, case in enumerate(cases):
        field_name = f"{name}[{index}]"
        if not isinstance(case, dict):
            raise StdioDataError(
                where, field_name, "expected an object with input, output, testtype"
            )
        for key in ("input", "output", "testtype"):
            if not isinstance(case.get(key), str):
                raise StdioDataError(where, f"{field_name}.{key}", "missing or not a string")
        if case["testtype"] not in TEST_TYPES:
            raise StdioDataError(
                where, f"{field_name}.testtype", f"{case['testtype']!r} is not one of {TEST_TYPES}"
            )
        tests.append(IoTest(case["input"], case["output"], group, case["testtype"]))
    return tests


def _contest_date(row: dict[str, Any], where: str) -> datetime:
    value = text_field(row, "contest_date", where)
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        raise StdioDataError(where, "contest_date", f"{value!r} is not an ISO date") from None


def _choice(row: dict[str, Any], name: str, allowed: tuple[str, ...], where: str) -> str:
    value = text_field(row, name, where)
    if value not in allowed:
        raise StdioDataError(where, name, f"{value!r} is not one of {', '.join(allowed)}")
    return value


def parse_row(where: str, row: dict[str, Any], release: int = 0, suite: str = SUITE) -> StdioRecord:
    """One row of ``code_generation_lite`` as a :class:`StdioRecord`."""
    question_id = text_field(row, "question_id", where)
    if not question_id.strip():
        raise StdioDataError(where, "question_id", "empty")
    metadata = json_text_field(row, "metadata", where) if row.get("metadata") else {}
    if not isinstance(metadata, dict):
        raise StdioDataError(where, "metadata", "expected a JSON object")
    func_name = metadata.get("func_name")
    if func_name is not None and (not isinstance(func_name, str) or not func_name.isidentifier()):
        raise StdioDataError(where, "metadata.func_name", f"{func_name!r} is not a Python name")
    public = _tests(row, "public_test_cases", "public", where)
    private = _tests(row, "private_test_cases", "private", where)
    defects = []
    if not public and not private:
        defects.append("public_test_cases, private_test_cases: no tests")
    kind = "functional" if func_name else "stdin"
    for name, tests in (("public_test_cases", public), ("private_test_cases", private)):
        odd = [i for i, t in enumerate(tests) if t.kind != kind]
        if odd:
            defects.append(f"{name}{odd}: testtype is not {kind!r}, as metadata.func_name says")
    contest_date = _contest_date(row, where)
    return StdioRecord(
        suite=suite,
        task_id=question_id,
        statement=text_field(row, "question_content", where),
        tests=tuple(public + private),
        starter_code=text_field(row, "starter_code", where, required=False),
        fn_name=func_name,
        defects=tuple(defects),
        metadata={
            "title": text_field(row, "question_title", where, required=False),
            "platform": _choice(row, "platform", PLATFORMS, where),
            "difficulty": _choice(row, "difficulty", DIFFICULTIES, where),
            "contest_id": str(row.get("contest_id") or ""),
            "contest_date": contest_date.date().isoformat(),
            "release": release,
            "test_kind": kind,
            "source": where,
        },
    )


def release_file(number: int) -> str:
    """Release N's file: ``test.jsonl`` for the first, ``testN.jsonl`` after."""
    return "test.jsonl" if number == 1 else f"test{number}.jsonl"


def _mirror_releases(mirror: Path) -> list[Path]:
    """The mirror's release files in order (``.jsonl`` or ``.jsonl.gz``); a gap is an error,
    since release N is numbered by its file."""
    found: list[Path] = []
    for number in range(1, MAX_RELEASES + 1):
        name = release_file(number)
        path = next((mirror / n for n in (name, name + ".gz") if (mirror / n).is_file()), None)
        if path is None:
            break
        found.append(path)
    if not found:
        raise SuiteError(f"{SUITE}: {mirror} holds no test.jsonl (release 1)")
    later = release_file(len(found) + 2)
    if any((mirror / n).is_file() for n in (later, later + ".gz")):
        raise SuiteError(f"{SUITE}: {mirror} has {later} but no {release_file(len(found) + 1)}")
    return found


def _release_rows(data_dir: Path | None) -> list[list[Row]]:
    """The rows of each release file, in release order (mirror, else the hub)."""
    mirror = find_mirror(data_dir, MIRROR)
    if mirror is not None:
        return [read_jsonl_rows(path) for path in _mirror_releases(mirror)]
    hint = f"a folder {MIRROR}/ with test.jsonl, test2.jsonl... in $CODEEVAL_DATA_DIR"
    releases = []
    for number in range(1, MAX_RELEASES + 1):
        try:
            releases.append(hub_file_rows(HUB_NAME, release_file(number), SUITE, hint))
        except HubFileMissing:
            if not releases:
                raise
            break  # a later release not published (yet): the ones before it are the data set
    return releases


def load(data_dir: Path | None = None, option: str | None = None) -> dict[str, list[Problem]]:
    """Splits ``test`` (every release), ``release_vN`` (cumulative) and ``vN`` (one release),
    each filtered to the date window in ``option`` (``FROM..TO``) when one is given; a
    language in ``option`` (``cpp``) asks for programs in that language."""
    options = read_options(option, SUITE)
    if len(options.rest) > 1:
        raise SuiteError(f"{SUITE}: more than one date window in {option!r}")
    start, end = parse_window(options.rest[0]) if options.rest else (None, None)
    suite = suite_name(SUITE, option)
    per_release: list[list[StdioRecord]] = []
    everything: list[tuple[str, StdioRecord]] = []
    for number, rows in enumerate(_release_rows(data_dir), start=1):
        records = [(where, parse_row(where, row, number, suite)) for where, row in rows]
        everything += records
        per_release.append([r for _, r in records if _in_window(r, start, end)])
    unique_ids(everything)  # a question in two releases is a data error, not a silent repeat
    problems = [[to_problem(r, options) for r in release] for release in per_release]
    splits: dict[str, list[Problem]] = {"test": [p for release in problems for p in release]}
    for number in range(1, len(problems) + 1):
        splits[f"release_v{number}"] = [p for release in problems[:number] for p in release]
        splits[f"v{number}"] = list(problems[number - 1])
    return splits


def _in_window(record: StdioRecord, start: date | None, end: date | None) -> bool:
    day = date.fromisoformat(record.metadata["contest_date"])
    return (start is None or start <= day) and (end is None or day <= end)
