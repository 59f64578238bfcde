"""style: lint findings (count and codes) from ruff, one ``ruff check`` per batch.

Why ruff rather than pycodestyle: it is already a dependency of the project, one process
checks the whole batch in milliseconds (it is compiled, and reads every file of the batch in
parallel), its JSON output names each finding's code and position, and its rule set covers
pycodestyle's E/W codes plus pyflakes' F codes (undefined names, unused imports), which say
more about LLM code than whitespace does. It runs with its own fixed settings (``--isolated``)
so a user's ruff configuration never changes a reward.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TypedDict

from harness.analyzers.base import Report, Subject, write_programs

RULES = "E,W,F"
LINE_LENGTH = "100"


class StyleFinding(TypedDict):
    code: str
    line: int
    col: int
    message: str


class StyleReport(TypedDict):
    count: int
    codes: dict[str, int]
    findings: list[StyleFinding]


def ruff_command() -> list[str]:
    exe = shutil.which("ruff")
    return [exe] if exe else [sys.executable, "-m", "ruff"]


class StyleAnalyzer:
    name = "style"
    version = "2"  # 2: programs too long or too deep to analyze are not read
    static = True
    subprocess = True  # runs beside the in-process analyzers

    def analyze(self, subjects: Sequence[Subject]) -> list[Report]:
        with tempfile.TemporaryDirectory(prefix="codeeval-ruff-") as tmp:
            paths = write_programs(Path(tmp).resolve(), subjects)
            command = [
                *ruff_command(), "check", "--isolated", "--output-format", "json",
                "--select", RULES, "--line-length", LINE_LENGTH, "--no-cache", "--exit-zero",
                *map(str, paths),
            ]  # fmt: skip
            done = subprocess.run(command, capture_output=True, text=True, timeout=120)
            if done.returncode != 0:
                raise RuntimeError(f"ruff exited {done.returncode}: {done.stderr[-500:]}")
            by_file: dict[str, list[StyleFinding]] = {str(p): [] for p in paths}
            for item in json.loads(done.stdout or "[]"):
                by_file.setdefault(item["filename"], []).append(
                    {
                        "code": item.get("code") or "E999",  # a syntax error has no code
                        "line": item["location"]["row"],
                        "col": item["location"]["column"],
                        "message": item["message"],
                    }
                )
        reports: list[Report] = []
        for path in paths:
            findings = by_file.get(str(path), [])
            reports.append(
                {
                    "count": len(findings),
                    "codes": dict(Counter(f["code"] for f in findings)),
                    "findings": findings[:50],
                }
            )
        return reports
