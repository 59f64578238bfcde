"""types (optional, off by default): mypy errors per program, one mypy run per batch.

Only programs that parse go to mypy: a syntax error is a blocking error for mypy, and one in
the batch would hide every other program's errors. Bodies of unannotated functions are
checked too (``--check-untyped-defs``), since most generated helpers carry no annotations.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TypedDict

from harness.analyzers.base import Report, Subject, scan_parsed_programs

LINE_RE = re.compile(
    r"^(?P<file>[^:]+):(?P<line>\d+): error: (?P<msg>.*?)(?:  \[(?P<code>[\w-]+)\])?$"
)


class TypeError_(TypedDict):
    line: int
    code: str
    message: str


class TypesReport(TypedDict):
    count: int
    codes: dict[str, int]
    errors: list[TypeError_]


class TypesAnalyzer:
    name = "types"
    version = "3"  # 3: programs too long or too deep to analyze are not read
    static = True

    def analyze(self, subjects: Sequence[Subject]) -> list[Report]:
        return scan_parsed_programs(subjects, "codeeval-mypy-", _reports)


def _reports(paths: list[Path]) -> list[Report]:
    """One mypy run over all files; a report per file."""
    from mypy import api

    stdout, _, _ = api.run(
        [
            "--ignore-missing-imports",
            "--check-untyped-defs",
            "--no-error-summary",
            "--show-error-codes",
            "--no-incremental",
            "--follow-imports=silent",
            "--cache-dir=/dev/null",
            *map(str, paths),
        ]  # fmt: skip
    )
    by_name: dict[str, list[TypeError_]] = {p.name: [] for p in paths}
    for line in stdout.splitlines():
        match = LINE_RE.match(line)
        if match:
            by_name.setdefault(Path(match["file"]).name, []).append(
                {
                    "line": int(match["line"]),
                    "code": match["code"] or "misc",
                    "message": match["msg"],
                }
            )
    reports: list[Report] = []
    for path in paths:
        errors = by_name[path.name]
        reports.append(
            {
                "count": len(errors),
                "codes": dict(Counter(e["code"] for e in errors)),
                "errors": errors[:50],
            }
        )
    return reports
