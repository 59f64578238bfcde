"""bandit: security issues (test id, severity, confidence, line) for a whole batch at once.

Bandit runs in this process over the batch's programs written to one temporary folder: one
manager and one pass per batch, never a process per sample.
"""

from __future__ import annotations

import logging
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TypedDict

from harness.analyzers.base import Report, Subject, scan_parsed_programs

SEVERITY_RANK = {"LOW": 1, "MEDIUM": 2, "HIGH": 3}
_lock = threading.Lock()  # bandit's manager keeps global state (its logging, its extensions)


class BanditIssue(TypedDict):
    test_id: str
    test_name: str
    severity: str
    confidence: str
    line: int
    text: str


class BanditReport(TypedDict):
    issues: list[BanditIssue]
    count: int
    max_severity: str | None


class BanditAnalyzer:
    name = "bandit"
    version = "2"  # 2: programs too long or too deep to analyze are not read
    static = True

    def analyze(self, subjects: Sequence[Subject]) -> list[Report]:
        return scan_parsed_programs(subjects, "codeeval-bandit-", _reports)


def _reports(paths: list[Path]) -> list[Report]:
    """One bandit run over all files; a report per file."""
    found, skipped = scan([str(p) for p in paths])
    reports: list[Report] = []
    for path in paths:
        if str(path) in skipped:
            # Not scanned is not "no issues": a program bandit cannot read earns no credit.
            reports.append({"error": f"bandit could not scan it: {skipped[str(path)]}"})
            continue
        issues = found.get(str(path), [])
        worst = max((SEVERITY_RANK.get(x["severity"], 0) for x in issues), default=0)
        reports.append(
            {
                "issues": issues,
                "count": len(issues),
                "max_severity": next((k for k, v in SEVERITY_RANK.items() if v == worst), None),
            }
        )
    return reports


def scan(paths: list[str]) -> tuple[dict[str, list[BanditIssue]], dict[str, str]]:
    """Bandit's issues per file, with its default profile, and the files it skipped (why)."""
    # A file bandit cannot scan (a tree too deep for its visitors) is logged as an ERROR by
    # bandit; here it is the file's report instead.
    logging.getLogger("bandit").setLevel(logging.CRITICAL)
    # Bandit's output-format plugins that need extra packages (sarif) log an ERROR when its
    # manager loads them; this scan uses none of them, so that line is noise here.
    loader_log = logging.getLogger("stevedore.extension")
    level = loader_log.level
    loader_log.setLevel(logging.CRITICAL)
    try:
        return _scan(paths)
    finally:
        loader_log.setLevel(level)


def _scan(paths: list[str]) -> tuple[dict[str, list[BanditIssue]], dict[str, str]]:
    with _lock, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # bandit's plugin loader warns about deprecated args
        from bandit.core import config, manager

        mgr = manager.BanditManager(config.BanditConfig(), "file", quiet=True)
        mgr.discover_files(paths, recursive=False)
        mgr.run_tests()
        result: dict[str, list[BanditIssue]] = {p: [] for p in paths}
        for issue in mgr.get_issue_list():
            result.setdefault(issue.fname, []).append(
                {
                    "test_id": issue.test_id,
                    "test_name": issue.test,
                    "severity": issue.severity,
                    "confidence": issue.confidence,
                    "line": issue.lineno,
                    "text": issue.text,
                }
            )
        skipped = {str(name): str(why) for name, why in mgr.skipped}
    return result, skipped
