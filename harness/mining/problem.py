"""A mined suite line → a :class:`~harness.records.Problem` the harness runs like any other.

Every check is a ``sandbox`` case (the repository's test runs in the candidate's process: the
design's weaker kind) whose statement asks :mod:`harness.mining.inside_check` for one test's
outcome; the first check of a sample runs the problem's tests once, the others reuse it.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

from harness.mining.model import FORMAT
from harness.records import CheckCase, Problem

_HERE = Path(__file__).resolve().parent
FIRST_CASE_TIMEOUT_S = 60.0  # the whole test session; calibration replaces it with 10x its time
CASE_TIMEOUT_S = 5.0


def program_setup(header_names: tuple[str, ...] | list[str]) -> str:
    """Code before the prompt so that its stub runs alone: annotations are not evaluated, and
    each module name a default uses stands for itself (the checks run the real module)."""
    lines = ["from __future__ import annotations"]
    if header_names:
        lines += [
            "",
            "",
            "class _RepositoryName:  # a name of the repository the stub's defaults use",
            "    def __getattr__(self, name): return self",
            "    def __call__(self, *args, **kwargs): return self",
            "    def __getitem__(self, key): return self",
            "",
            "",
            *(f"{name} = _RepositoryName()" for name in header_names),
        ]
    return "\n".join(lines) + "\n"


@cache
def inside_source(name: str) -> str:
    """The text of one of the modules that run inside the sandbox."""
    return (_HERE / f"{name}.py").read_text()


def check_spec(record: dict[str, Any]) -> dict[str, Any]:
    """What ``__mined_check__`` needs: the repository copy, where the hole is, which tests."""
    return {
        "zip": record["repository_zip"],
        "path": record["path"],
        "hole_line": record["hole_line"],
        "indent": record["indent"],
        "name": record["entry_point"],
        "class": record.get("class_name"),
        "tests": list(record["tests"]),
        "doctest": bool(record.get("doctest")),
        "pythonpath": list(record.get("pythonpath", [])),
        "reporter": inside_source("inside_reporter"),
    }


def case_id(index: int, test_id: str) -> str:
    """A readable Python name for the check of ``test_id`` (its index keeps it unique)."""
    tail = re.sub(r"\W+", "_", test_id.rsplit("::", 1)[-1]).strip("_")[:40]
    return f"check_{index + 1}_{tail}".rstrip("_")


def problem_from_record(
    record: dict[str, Any], suite: str, extra: dict[str, Any] | None = None
) -> Problem:
    """The problem of one mined suite line (already validated by ``suites.mined``)."""
    setup = inside_source("inside_check") + f"\n\n_MINED_SPEC = {check_spec(record)!r}\n"
    cases = tuple(
        CheckCase(
            case_id=case_id(i, test),
            source=test,
            mode="sandbox",
            statement=f"__mined_check__({test!r})",
            timeout_s=FIRST_CASE_TIMEOUT_S if i == 0 else CASE_TIMEOUT_S,
        )
        for i, test in enumerate(record["tests"])
    )
    metadata = {
        "format": FORMAT,
        "tier": record["tier"],
        "features": dict(record.get("features", {})),
        "repository": record.get("repository", ""),
        "path": record["path"],
        "qualname": record.get("qualname", record["entry_point"]),
        "tests": list(record["tests"]),
        **(extra or {}),
    }
    return Problem(
        suite=suite,
        task_id=record["task_id"],
        prompt=record["prompt"],
        entry_point=record["entry_point"],
        cases=cases,
        reference=record.get("canonical_solution") or "",
        program_setup=record.get("program_setup") or "",
        test_setup=setup,
        metadata=metadata,
    )
