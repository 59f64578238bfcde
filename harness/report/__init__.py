"""Self-contained HTML reports of runs and A/B comparisons (plots embedded as SVG data URIs)."""

from __future__ import annotations

from pathlib import Path

from harness.history import History
from harness.report.compare import compare_page, compare_verdicts
from harness.report.html import PAGE_ERRORS
from harness.report.pages import report_page
from harness.report.rundata import RunData, RunFileError, load_out_dir, load_run

__all__ = [
    "RunData",
    "RunFileError",
    "compare_page",
    "compare_verdicts",
    "load_out_dir",
    "load_run",
    "report_page",
    "write_compare",
    "write_report",
]


def write_report(run: RunData, path: Path, history: History | None = None) -> Path:
    """Write the report page of ``run`` to ``path`` and return it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(report_page(run, history), encoding="utf-8", errors=PAGE_ERRORS)
    return path


def write_compare(a: RunData, b: RunData, path: Path) -> Path:
    """Write the A/B comparison page to ``path`` and return it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        compare_page(a, b, compare_verdicts(a, b)), encoding="utf-8", errors=PAGE_ERRORS
    )
    return path
